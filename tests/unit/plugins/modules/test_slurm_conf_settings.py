"""slurm_conf_settings on real file trees: the main slurm.conf and the files it includes, as Slurm
reads them. A site's own Prolog or NHC anywhere is refused naming file and line and nothing is written;
our own lines are left alone; absent removes only ours; check mode writes nothing."""

import os
import stat

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.modules import slurm_conf_settings
from moduletest import run_module

OURS = "/usr/local/sbin/gpufabric-"
HOOKS = {"HealthCheckProgram": OURS + "healthcheck", "HealthCheckInterval": "300", "HealthCheckNodeState": "ANY",
         "Prolog": OURS + "prolog"}
SITE = "ClusterName=Alpha\nSlurmctldHost=ctl\nNodeName=gpu[01-02] CPUs=8\nPartitionName=gpu Nodes=ALL Default=YES\n"


@pytest.fixture
def etc(tmp_path, monkeypatch):
    """A /etc/slurm in tmp_path; no Slurm program answers -V unless a test puts one on PATH."""
    monkeypatch.setattr(commands, "SBIN_DIRS", ())
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    root = tmp_path / "etc" / "slurm"
    (root / "conf.d").mkdir(parents=True)
    return root


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def run(main, settings=None, check_mode=False, diff=False, **args):
    args.setdefault("slurm_version", "24.11")
    return run_module(slurm_conf_settings, dict(args, path=str(main), ours_prefix=OURS,
                                                settings=HOOKS if settings is None else settings),
                      check_mode=check_mode, diff=diff)


def untouched(*paths):
    """Snapshot of the files' bytes and mtimes, to compare after a run."""
    return [(p.read_bytes(), p.stat().st_mtime_ns) for p in paths]


def test_site_prolog_two_includes_deep_is_refused_naming_file_and_line(etc):
    main = write(etc / "slurm.conf", SITE + "Include conf.d/site.conf\n")
    site = write(etc / "conf.d" / "site.conf", "# site settings\nInclude conf.d/%c-hooks.conf\n")
    hooks = write(etc / "conf.d" / "alpha-hooks.conf", "MaxJobCount=10000\n\nProlog=/etc/slurm/prolog.sh\n")
    before = untouched(main, site, hooks)
    result = run(main)
    assert result["failed"] is True
    assert result["msg"].startswith(
        "Prolog=/etc/slurm/prolog.sh in %s line 3 is the site's own: gpufabric does not replace it; call "
        "%sprolog from /etc/slurm/prolog.sh, or remove that line" % (hooks, OURS))
    assert result["conflicts"] == ["%s:3 Prolog=/etc/slurm/prolog.sh" % hooks]
    assert result["files"] == [str(main), str(site), str(hooks)]
    assert untouched(main, site, hooks) == before


def test_before_slurm_23_02_a_nested_relative_include_is_relative_to_the_including_file(etc, tmp_path):
    main = write(etc / "slurm.conf", SITE + "Include conf.d/site.conf\n")
    write(etc / "conf.d" / "site.conf", "Include hooks.conf\n")
    nested = write(etc / "conf.d" / "hooks.conf", "Prolog=/etc/slurm/prolog.sh\n")
    write(etc / "hooks.conf", "Epilog=/etc/slurm/epilog.sh\n")
    assert run(main, slurm_version="22.05.8")["conflicts"] == ["%s:1 Prolog=/etc/slurm/prolog.sh" % nested]
    newer = run(main, slurm_version="23.02")
    assert newer["conflicts"] == [] and newer["files"][-1] == str(etc / "hooks.conf")
    # The release from the Slurm programs themselves, when none is given.
    slurmd = write(tmp_path / "bin" / "slurmd", "#!/bin/sh\necho 'slurm-wlm 22.05.8'\n")
    slurmd.chmod(0o755)
    detected = run(main, check_mode=True, slurm_version=None)
    assert detected["slurm_version"] == "22.05" and detected["conflicts"] == ["%s:1 Prolog=/etc/slurm/prolog.sh" % nested]


def test_an_unknown_release_refuses_an_include_whose_file_depends_on_it(etc):
    main = write(etc / "slurm.conf", SITE + "Include conf.d/site.conf\n")
    write(etc / "conf.d" / "site.conf", "Include hooks.conf\n")
    result = run(main, slurm_version=None)
    assert result["failed"] is True and result["slurm_version"] is None
    assert result["msg"].startswith("Include hooks.conf in %s line 1 is relative: Slurm 23.02 and later read %s, "
                                    "older releases %s" % (etc / "conf.d" / "site.conf", etc / "hooks.conf",
                                                           etc / "conf.d" / "hooks.conf"))
    assert "set slurm_version" in result["msg"]


def test_nhc_in_an_included_file_is_refused(etc):
    main = write(etc / "slurm.conf", SITE + "Include /%s/nhc.conf\n" % str(etc / "conf.d").strip("/"))
    nhc = write(etc / "conf.d" / "nhc.conf", "HealthCheckProgram=/usr/sbin/nhc\nHealthCheckInterval=300\n")
    before = untouched(main)
    result = run(main)
    assert result["failed"] is True
    assert result["msg"].startswith("HealthCheckProgram=/usr/sbin/nhc in %s line 1 is the site's own" % nhc)
    assert result["conflicts"] == ["%s:1 HealthCheckProgram=/usr/sbin/nhc" % nhc, "%s:2 HealthCheckInterval=300" % nhc]
    assert "also: %s:2 HealthCheckInterval=300 (an included file)" % nhc in result["msg"]
    assert untouched(main) == before


def test_a_glob_include_is_refused_as_slurm_expands_none(etc):
    main = write(etc / "slurm.conf", SITE + "Include conf.d/*.conf\n")
    write(etc / "conf.d" / "site.conf", "Prolog=/etc/slurm/prolog.sh\n")
    result = run(main)
    assert result["failed"] is True
    assert result["msg"].startswith("Include conf.d/*.conf in %s line 5 names a glob: Slurm expands no \"*\"" % main)


def test_a_missing_included_file_is_refused(etc):
    main = write(etc / "slurm.conf", SITE + "include gone.conf\n")
    result = run(main)
    assert result["failed"] is True
    assert result["msg"].startswith("Include gone.conf in %s line 5 names %s, which does not exist" % (main, etc / "gone.conf"))


def test_an_include_loop_ends_with_a_clear_error(etc):
    main = write(etc / "slurm.conf", SITE + "Include conf.d/a.conf\n")
    write(etc / "conf.d" / "a.conf", "Include conf.d/b.conf\n")
    write(etc / "conf.d" / "b.conf", "Include slurm.conf\n")
    result = run(main)
    assert result["failed"] is True
    assert result["msg"].startswith("Include slurm.conf in %s line 1 closes a loop (%s -> %s -> %s -> %s)" % (
        etc / "conf.d" / "b.conf", main, etc / "conf.d" / "a.conf", etc / "conf.d" / "b.conf", main))


def test_our_settings_already_present_change_nothing(etc):
    main = write(etc / "slurm.conf", SITE + "".join("%s=%s\n" % item for item in HOOKS.items()))
    before = untouched(main)
    result = run(main)
    assert result["changed"] is False and "failed" not in result
    assert result["settings"]["Prolog"] == {"value": OURS + "prolog", "file": str(main), "line": 8}
    assert untouched(main) == before


def test_check_mode_reports_the_diff_and_writes_nothing(etc):
    main = write(etc / "slurm.conf", SITE + "Include conf.d/site.conf\n")
    write(etc / "conf.d" / "site.conf", "Epilog=/etc/slurm/epilog.sh\n")
    before = untouched(main)
    result = run(main, check_mode=True, diff=True)
    assert result["changed"] is True and untouched(main) == before
    (diff,) = result["diff"]
    assert diff["before"] == SITE + "Include conf.d/site.conf\n"
    assert diff["after"] == diff["before"] + "".join("%s=%s # managed by gpufabric.rdma\n" % item for item in HOOKS.items())
    assert diff["before_header"] == str(main)


def test_present_then_absent_keeps_the_site_lines_mode_and_link(etc, tmp_path):
    real = write(tmp_path / "shared" / "slurm.conf", SITE + "HealthCheckNodeState=IDLE\nEpilog=/site/epilog\n")
    real.chmod(0o640)
    main = etc / "slurm.conf"
    main.symlink_to(real)
    original = real.read_text()
    installed = run(main)
    assert installed["changed"] is True and main.is_symlink()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    text = real.read_text()
    assert "HealthCheckNodeState=ANY # managed by gpufabric.rdma, replaced: HealthCheckNodeState=IDLE\n" in text
    assert run(main)["changed"] is False
    removed = run(main, {"HealthCheckInterval": "", "HealthCheckNodeState": ""}, state="absent")
    assert removed["changed"] is True and real.read_text() == original and main.is_symlink()
    assert removed["settings"]["HealthCheckNodeState"] == {"value": "IDLE", "file": str(main), "line": 5}
    assert sorted(os.listdir(str(real.parent))) == ["slurm.conf"]


def test_absent_leaves_a_site_prolog_and_warns_about_ours_in_an_included_file(etc):
    main = write(etc / "slurm.conf", SITE + "Prolog=/etc/slurm/site-prolog.sh\nHealthCheckProgram=%shealthcheck\n"
                 "Include conf.d/x.conf\n" % OURS)
    included = write(etc / "conf.d" / "x.conf", "Prolog=%sprolog\n" % OURS)
    result = run(main, {}, state="absent")
    assert result["changed"] is True
    assert main.read_text() == SITE + "Prolog=/etc/slurm/site-prolog.sh\nInclude conf.d/x.conf\n"
    assert result["warnings"] == ["Prolog=%sprolog in %s line 1 is gpufabric's, but in a file the site includes: it "
                                  "stays; remove it there" % (OURS, included)]


def test_crlf_bom_and_bytes_that_are_not_utf8_are_read_and_kept(etc):
    main = write(etc / "slurm.conf", b"\xef\xbb\xbfClusterName=alpha\r\nNodeName=caf\xe9 CPUs=8\r\nInclude site.conf\r\n")
    site = write(etc / "site.conf", b"\xef\xbb\xbf# site\r\nProlog=/opt/caf\xe9/prolog\r\n")
    refused = run(main)
    assert refused["conflicts"] == [u"%s:2 Prolog=/opt/caf\ufffd/prolog" % site]
    site.write_bytes(b"\xef\xbb\xbf# site\r\nEpilog=/opt/caf\xe9/epilog\r\n")
    assert run(main, {"Prolog": OURS + "prolog"})["changed"] is True
    assert main.read_bytes() == (b"\xef\xbb\xbfClusterName=alpha\r\nNodeName=caf\xe9 CPUs=8\r\nInclude site.conf\r\n"
                                 b"Prolog=/usr/local/sbin/gpufabric-prolog # managed by gpufabric.rdma\r\n")


@pytest.mark.parametrize("settings, message", [
    ({"Prolog": "/etc/slurm/prolog.sh"}, "settings.Prolog=/etc/slurm/prolog.sh does not start with ours_prefix %s" % OURS),
    ({"Health Check": "x"}, "settings key 'Health Check' is not a slurm.conf parameter name"),
    ({"NodeName": "x"}, "settings key NodeName defines nodes, partitions or an Include, not a parameter"),
    ({"Prolog": OURS + "a\nb"}, "settings.Prolog contains a newline (character"),
    ({"prolog": OURS + "a", "Prolog": OURS + "b"}, "settings has both prolog and Prolog"),
])
def test_bad_settings_fail_before_anything_is_read(etc, settings, message):
    result = run(etc / "absent.conf", settings)
    assert result["failed"] is True and result["msg"].startswith(message)


def test_a_missing_main_file_fails_naming_it(etc):
    result = run(etc / "slurm.conf")
    assert result["failed"] is True and result["msg"].startswith("%s does not exist" % (etc / "slurm.conf"))


TOPOLOGY = {"TopologyPlugin": "topology/tree"}


def test_keep_site_leaves_the_same_value_and_refuses_another(etc):
    same = write(etc / "slurm.conf", SITE + "TopologyPlugin=topology/tree\n")
    before = untouched(same)
    result = run(same, TOPOLOGY, keep_site=["TopologyPlugin"], owned=[])
    assert result["changed"] is False and "failed" not in result and untouched(same) == before
    other = write(etc / "slurm.conf", SITE + "TopologyPlugin=topology/block\n")
    before = untouched(other)
    result = run(other, TOPOLOGY, keep_site=["TopologyPlugin"], owned=[])
    assert result["failed"] is True and untouched(other) == before
    assert result["msg"] == ("TopologyPlugin=topology/block in %s line 5 is the site's own: gpufabric does not replace it "
                             "with topology/tree; set the same value in gpufabric's variables, or remove that line" % other)
    # without keep_site the same line would be replaced (the site's kept in the comment): the module's default
    assert run(other, TOPOLOGY, owned=[], check_mode=True)["changed"] is True


def test_keep_site_replaces_our_own_line_and_refuses_an_included_one(etc):
    main = write(etc / "slurm.conf", SITE + "TopologyPlugin=topology/block # managed by gpufabric.rdma\n")
    result = run(main, TOPOLOGY, keep_site=["TopologyPlugin"], owned=[])
    assert result["changed"] is True
    assert main.read_text().endswith("TopologyPlugin=topology/tree # managed by gpufabric.rdma\n")
    write(etc / "slurm.conf", SITE + "Include conf.d/topology.conf\n")
    write(etc / "conf.d" / "topology.conf", "TopologyPlugin=topology/tree\n")
    result = run(etc / "slurm.conf", TOPOLOGY, keep_site=["TopologyPlugin"], owned=[])
    assert result["failed"] is True and "is set in a file that" in result["msg"]
