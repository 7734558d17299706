"""The changelog comes from the fragments through antsibull-changelog: the fragments lint clean,
CHANGELOG.rst is exactly what antsibull-changelog generates from changelogs/changelog.yaml, and a
release of the next version (done in a copy) renders every pending fragment."""

import os
import shutil
import subprocess

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FRAGMENTS = os.path.join(ROOT, "changelogs", "fragments")


def _fragments(directory):
    """Pending fragments (.keep holds the directory in git when there are none)."""
    return sorted(n for n in os.listdir(str(directory)) if n.endswith((".yml", ".yaml")))


def _copy(tmp_path):
    copy = tmp_path / "collection"
    copy.mkdir()
    shutil.copytree(os.path.join(ROOT, "changelogs"), str(copy / "changelogs"))
    shutil.copy(os.path.join(ROOT, "galaxy.yml"), str(copy / "galaxy.yml"))
    if os.path.exists(os.path.join(ROOT, "CHANGELOG.rst")):
        shutil.copy(os.path.join(ROOT, "CHANGELOG.rst"), str(copy / "CHANGELOG.rst"))
    return copy


def _changelog(*args, cwd):
    run = subprocess.run(["antsibull-changelog"] + list(args), cwd=str(cwd), capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def _words(text):
    return " ".join(text.split())


def _releases():
    with open(os.path.join(ROOT, "changelogs", "changelog.yaml"), encoding="utf-8") as handle:
        return (yaml.safe_load(handle) or {}).get("releases") or {}


def test_fragments_lint_clean():
    assert _changelog("lint", cwd=ROOT).stdout.strip() == ""


def test_changelog_rst_is_generated(tmp_path):
    releases = _releases()
    if not releases:
        assert not os.path.exists(os.path.join(ROOT, "CHANGELOG.rst"))
        return
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    assert version in releases  # galaxy.yml is at the newest release until the next one is cut
    copy = _copy(tmp_path)
    (copy / "CHANGELOG.rst").unlink()
    _changelog("generate", cwd=copy)
    with open(os.path.join(ROOT, "CHANGELOG.rst"), encoding="utf-8") as handle:
        assert (copy / "CHANGELOG.rst").read_text() == handle.read()


def test_the_next_release_renders_every_fragment(tmp_path):
    copy = _copy(tmp_path)
    with open(str(copy / "galaxy.yml"), encoding="utf-8") as handle:
        galaxy = yaml.safe_load(handle)
    major, minor = galaxy["version"].split(".")[:2]
    following = "%s.%d.0" % (major, int(minor) + 1)
    # A fragment of our own, so the rendering is exercised even when none is pending.
    (copy / "changelogs" / "fragments" / "0-probe.yml").write_text(
        "bugfixes:\n  - probe fragment - rendered by the release of the next version.\n")
    galaxy["version"] = following
    (copy / "galaxy.yml").write_text(yaml.safe_dump(galaxy))
    _changelog("release", "--version", following, "--date", "2026-11-23", cwd=copy)
    rendered = _words((copy / "CHANGELOG.rst").read_text())
    assert "v%s" % following in rendered and "probe fragment - rendered by the release" in rendered
    for name in _fragments(FRAGMENTS):
        with open(os.path.join(FRAGMENTS, name), encoding="utf-8") as handle:
            fragment = yaml.safe_load(handle)
        for section, items in fragment.items():
            for item in items if isinstance(items, list) else [items]:
                # RST rendering keeps the words; compare the first few.
                assert " ".join(item.split()[:6]) in rendered, (name, section)
    # keep_fragments: false - a release consumes the fragments.
    assert _fragments(copy / "changelogs" / "fragments") == []
