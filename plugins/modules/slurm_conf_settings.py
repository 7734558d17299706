#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: slurm_conf_settings
short_description: Set or remove gpufabric's parameters in slurm.conf, never over a site's own, Include lines followed
version_added: 0.2.0
author: gpufabric.rdma maintainers (@gpufabric)
description:
  - Sets parameters such as C(HealthCheckProgram), C(HealthCheckInterval), C(HealthCheckNodeState) and C(Prolog)
    in the main C(slurm.conf) (O(path)), or removes the ones gpufabric wrote.
  - Reads the file as slurmctld and slurmd do, B(following every Include line) to the files it names, and
    theirs in turn, in Slurm's order - comments, backslash continuations and escapes, C("quoted values"),
    case-insensitive keywords and keys. C(%c) in an included name is the C(ClusterName) set above it, lower-cased.
    A relative name is taken relative to the directory of the main C(slurm.conf) since Slurm 23.02, and to the
    directory of the including file before (see O(slurm_version)). Slurm expands no glob in an C(Include) line
    and stops on a missing included file; so does this module, naming the file and line.
  - Refuses, naming file and line and changing nothing, when a key of O(owned) that O(settings) sets already
    has a value anywhere - main file or included - that does not start with O(ours_prefix) (a site's own
    C(Prolog), NHC's C(HealthCheckProgram=/usr/sbin/nhc)) - Slurm would run only one of them, or both.
  - Refuses as well when an included file sets any key of O(settings) - the module only ever edits the main
    file, never a file the site includes, and two definitions of one key leave the later one in effect.
  - In the main file the last line of a key is replaced in place (an earlier line of gpufabric's is removed),
    a key set nowhere is appended, and every other byte - comments, order, CRLF line ends, a BOM, bytes that
    are not UTF-8 - is kept. Each line written ends in the comment C(# managed by gpufabric.rdma); when it
    replaced a line of the site's (say C(HealthCheckNodeState=IDLE)), that line is kept in the comment and
    comes back with O(state=absent).
  - The file is written only when its content changes, through a temporary file in its directory renamed
    over it (a link is followed to the file it names), keeping its mode, owner and SELinux context.
options:
  path:
    description: The main slurm.conf (what C(SLURM_CONF) names for the daemons).
    type: path
    default: /etc/slurm/slurm.conf
  settings:
    description:
      - Parameters to set, key to value, e.g. C(Prolog) to C(/usr/local/sbin/gpufabric-prolog). A value is one line
        without control characters or double quotes; a number is written as its text.
      - With O(state=absent) only the keys count.
    type: dict
    default: {}
  owned:
    description:
      - Keys that run a program of gpufabric's. When O(settings) sets one of them, any value it already has in
        the main file or an included file must start with O(ours_prefix) (or be empty); another value is the
        site's own and the module fails. The value O(settings) gives such a key must start with O(ours_prefix).
      - With O(state=absent) their lines that start with O(ours_prefix) are removed even when O(settings) does
        not name them.
    type: list
    elements: str
    default: [HealthCheckProgram, Prolog]
  ours_prefix:
    description:
      - A value starting with this is gpufabric's, e.g. C(/usr/local/sbin/gpufabric-).
    type: str
    required: true
  keep_site:
    description:
      - Keys whose value in the main file, when it is the site's own (a line without the C(managed by
        gpufabric.rdma) comment), is never replaced - the same value as O(settings) gives is left as it is
        (nothing changes), another fails naming file and line. For settings that are a choice rather than a
        program of gpufabric's, such as C(TopologyPlugin).
    type: list
    elements: str
    default: []
  state:
    description:
      - V(present) sets O(settings). V(absent) removes, among the keys of O(settings) and O(owned), the lines of
        the main file that start with O(ours_prefix) or carry the C(managed by gpufabric.rdma) comment, and puts
        back a line of the site's that one of them had replaced. Lines of the site's are never removed.
    type: str
    default: present
    choices: [present, absent]
  slurm_version:
    description:
      - The Slurm release that reads the file (C(23.02), C(24.11.5)). It decides where a relative C(Include)
        name points in a file that is not in the main file's directory. Unset asks C(slurmctld -V),
        C(slurmd -V), then C(scontrol -V); when none answers and the two rules name different files, the
        module fails rather than guess.
    type: str
extends_documentation_fragment:
  - gpufabric.rdma.command_timeout
attributes:
  check_mode:
    support: full
    description: Everything is read, checked and compared; nothing is written. A conflict fails in check mode too.
  diff_mode:
    support: full
    description: The main file before and after.
notes:
  - Included files are read, never written. A line of gpufabric's in an included file is left there (with
    O(state=absent) the module warns about it).
  - Lines that gpufabric wrote before this module existed (without the comment) are recognised by
    O(ours_prefix) for the keys of O(owned); an interval or node state line of that time is left in place by
    O(state=absent).
seealso:
  - name: slurm.conf(5)
    description: Include lines, INCLUDE MODIFIERS, HealthCheckProgram, Prolog.
    link: https://slurm.schedmd.com/slurm.conf.html
"""

EXAMPLES = r"""
- name: Run gpufabric's health check from slurmd, unless the site runs its own
  gpufabric.rdma.slurm_conf_settings:
    path: /etc/slurm/slurm.conf
    settings:
      HealthCheckProgram: /usr/local/sbin/gpufabric-healthcheck
      HealthCheckInterval: 300
      HealthCheckNodeState: ANY
    ours_prefix: /usr/local/sbin/gpufabric-
  notify: Reconfigure Slurm

- name: Check every Slurm host first, writing nothing
  gpufabric.rdma.slurm_conf_settings:
    settings:
      Prolog: /usr/local/sbin/gpufabric-prolog
    ours_prefix: /usr/local/sbin/gpufabric-
    slurm_version: "24.11"
  check_mode: true

- name: Remove gpufabric's lines, leave the site's
  gpufabric.rdma.slurm_conf_settings:
    settings: {HealthCheckProgram: "", HealthCheckInterval: "", HealthCheckNodeState: "", Prolog: ""}
    ours_prefix: /usr/local/sbin/gpufabric-
    state: absent
"""

RETURN = r"""
conflicts:
  description:
    - Settings that stop the change, as C(file:line Key=value) - a site's own value of a key of O(owned), or a key
      of O(settings) that an included file sets. Returned with the failure too.
  returned: always
  type: list
  elements: str
  sample: ["/etc/slurm/conf.d/site.conf:3 Prolog=/etc/slurm/prolog.sh"]
files:
  description: Every file read, in the order Slurm reads them; the main file first.
  returned: always
  type: list
  elements: str
  sample: ["/etc/slurm/slurm.conf", "/etc/slurm/conf.d/site.conf"]
settings:
  description:
    - The keys of O(settings) and O(owned) with what is in effect after the change (in check mode, what would
      be) - the last definition in Slurm's reading order, with its file and line - or null where none is set.
  returned: always
  type: dict
  sample:
    Prolog: {value: /usr/local/sbin/gpufabric-prolog, file: /etc/slurm/slurm.conf, line: 42}
    HealthCheckProgram: null
slurm_version:
  description: The Slurm release the Include rule was chosen for (O(slurm_version), or what C(-V) printed), or null.
  returned: always
  type: str
  sample: "24.11"
"""

import errno
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.node import commands
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import slurm_conf

# The Slurm programs asked for their release, in this order.
VERSION_TOOLS = ("slurmctld", "slurmd", "scontrol")


def _read(path):
    """The file's bytes, or None when it does not exist; OSError for anything else."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise


def _display(content):
    """File text for the diff: bytes that are not UTF-8 shown as U+FFFD."""
    return content.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _check_key(module, where, key):
    if not isinstance(key, str) or not slurm_conf.CONF_KEY_RE.match(key):
        module.fail_json(msg="%s %r is not a slurm.conf parameter name: a letter, then letters and digits, "
                             "such as HealthCheckProgram" % (where, key))
    if key.lower() in slurm_conf.CONF_LINE_KEYS:
        module.fail_json(msg="%s %s defines nodes, partitions or an Include, not a parameter: this module sets "
                             "parameters such as HealthCheckProgram and Prolog" % (where, key))


def _check_options(module):
    params = module.params
    prefix = params["ours_prefix"]
    if not prefix or text.describe_unsafe(prefix):
        module.fail_json(msg="ours_prefix must be a non-empty one-line prefix of gpufabric's values such as "
                             "/usr/local/sbin/gpufabric-, got %r" % (prefix,))
    owned = set()
    for key in params["owned"]:
        _check_key(module, "owned entry", key)
        owned.add(key.lower())
    for key in params["keep_site"]:
        _check_key(module, "keep_site entry", key)
    settings, seen = {}, {}
    for key, value in params["settings"].items():
        _check_key(module, "settings key", key)
        if key.lower() in seen:
            module.fail_json(msg="settings has both %s and %s: slurm.conf keys are case-insensitive, give one of them"
                                 % (seen[key.lower()], key))
        seen[key.lower()] = key
        if params["state"] == "absent":
            settings[key] = ""
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            module.fail_json(msg="settings.%s must be a string or a number, got %s" % (key, type(value).__name__))
        value = str(value)
        problem = text.describe_unsafe(value)
        if problem:
            module.fail_json(msg="settings.%s %s: a slurm.conf value must be one line without control characters"
                                 % (key, problem))
        if '"' in value:
            module.fail_json(msg="settings.%s=%s holds a double quote, which a slurm.conf value cannot carry: "
                                 "give it without one" % (key, value))
        if key.lower() in owned and not value.startswith(prefix):
            module.fail_json(msg="settings.%s=%s does not start with ours_prefix %s: %s is in owned, so the next "
                                 "run would take this value for the site's own; give a value under %s"
                                 % (key, value, prefix, key, prefix))
        settings[key] = value
    return settings


def _slurm_version(module):
    given = module.params["slurm_version"]
    if given:
        version = slurm_conf.parse_version(given)
        if not version or not given.strip()[:1].isdigit():
            module.fail_json(msg="slurm_version must be a Slurm release such as 23.02 or 24.11.5, got %r" % (given,))
        return version
    runner = commands.Runner(module.params["command_timeout"])
    for tool in VERSION_TOOLS:
        found = runner.which(tool)
        if found:
            result = runner.run([found, "-V"])
            version = slurm_conf.parse_version(result.stdout) if result.ok else None
            if version:
                return version
    return None


def _more(items):
    return "; also: " + "; ".join(items) if items else ""


def _fail_on_problem(module, problems, result):
    first, more = problems[0], [_problem_line(p) for p in problems[1:]]
    name, where, line = slurm_conf.shown(first["name"]), slurm_conf.shown(first["file"]), first["line"]
    kind = first["kind"]
    if kind == "missing":
        module.fail_json(msg="Include %s in %s line %d names %s, which does not exist: slurmctld and slurmd stop on "
                             "a missing included file (\"Unable to process configuration file\"); create the file or "
                             "remove the line%s" % (name, where, line, slurm_conf.shown(first["path"]), _more(more)), **result)
    if kind == "glob":
        module.fail_json(msg="Include %s in %s line %d names a glob: Slurm expands no \"*\" in an Include line and "
                             "stops with \"Unable to process configuration file\"; name each file on an Include line "
                             "of its own%s" % (name, where, line, _more(more)), **result)
    if kind == "cluster":
        module.fail_json(msg="Include %s in %s line %d uses %%c, but no ClusterName is set above that line: Slurm "
                             "cannot name the file and stops; set ClusterName before the Include line%s"
                             % (name, where, line, _more(more)), **result)
    if kind == "ambiguous":
        module.fail_json(msg="Include %s in %s line %d is relative: Slurm 23.02 and later read %s, older releases %s, "
                             "and no slurmctld, slurmd or scontrol on this host said its release (-V); set "
                             "slurm_version, or give the Include an absolute path%s"
                             % (name, where, line, slurm_conf.shown(first["paths"][0]), slurm_conf.shown(first["paths"][1]),
                                _more(more)), **result)
    if kind == "loop":
        module.fail_json(msg="Include %s in %s line %d closes a loop (%s): Slurm would read these files until it "
                             "fails; remove one of the Include lines%s"
                             % (name, where, line, " -> ".join(slurm_conf.shown(p) for p in first["chain"]), _more(more)),
                         **result)
    if kind == "depth":
        module.fail_json(msg="Include %s in %s line %d goes deeper than %d nested files: a loop through a link, or "
                             "includes nested too deep; include the files from fewer levels%s"
                             % (name, where, line, first["limit"], _more(more)), **result)
    module.fail_json(msg="more than %d Include lines are followed from %s (the last: %s line %d): an Include "
                         "repeated many times over; include each file once%s"
                         % (first["limit"], slurm_conf.shown(module.params["path"]), where, line, _more(more)), **result)


def _problem_line(problem):
    return "%s line %d: Include %s (%s)" % (slurm_conf.shown(problem["file"]), problem["line"], slurm_conf.shown(problem["name"]),
                                            problem["kind"])


def _fail_on_conflict(module, conflicts, main, result):
    first = conflicts[0]
    more = ["%s (%s)" % (slurm_conf.describe_conflict(c), "an included file" if c["kind"] == "included" else "the site's own")
            for c in conflicts[1:]]
    key, value, where, line = first["key"], slurm_conf.shown(first["value"]), slurm_conf.shown(first["file"]), first["line"]
    if first["kind"] == "site_value":
        module.fail_json(msg="%s=%s in %s line %d is the site's own: gpufabric does not replace it with %s; set the "
                             "same value in gpufabric's variables, or remove that line%s"
                             % (key, value, where, line, first["wanted"], _more(more)), **result)
    if first["kind"] == "site_hook":
        module.fail_json(msg="%s=%s in %s line %d is the site's own: gpufabric does not replace it; call %s from %s, "
                             "or remove that line%s" % (key, value, where, line, first["wanted"], value, _more(more)),
                         **result)
    module.fail_json(msg="%s=%s in %s line %d is set in a file that %s includes: gpufabric writes %s=%s only in %s, "
                         "never in a file of the site's; remove that line%s"
                         % (key, value, where, line, slurm_conf.shown(main), first["setting"], first["wanted"],
                            slurm_conf.shown(main), _more(more)), **result)


def _write(module, path, content):
    """content (bytes) to the file path names, through a temporary file in its directory."""
    real = os.path.realpath(path)
    directory = os.path.dirname(real) or "."
    handle, temporary = None, None
    try:
        handle, temporary = tempfile.mkstemp(prefix=".%s." % os.path.basename(real), suffix=".gpufabric",
                                             dir=directory)
        os.write(handle, content)
        os.close(handle)
        handle = None
        module.atomic_move(temporary, real)
    except (IOError, OSError) as exc:
        if handle is not None:
            os.close(handle)
        if temporary and os.path.exists(temporary):
            os.remove(temporary)
        module.fail_json(msg="writing %s failed: %s" % (real, exc))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/etc/slurm/slurm.conf"),
            settings=dict(type="dict", default={}),
            owned=dict(type="list", elements="str", default=list(slurm_conf.DEFAULT_OWNED)),
            ours_prefix=dict(type="str", required=True),
            keep_site=dict(type="list", elements="str", default=[]),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            slurm_version=dict(type="str"),
            **commands.ARGUMENT_SPEC
        ),
        supports_check_mode=True,
    )
    params = module.params
    settings = _check_options(module)
    version = _slurm_version(module)
    main_path = params["path"]
    result = dict(changed=False, conflicts=[], files=[main_path], settings={},
                  slurm_version="%d.%02d" % version if version else None)

    try:
        content = _read(main_path)
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read %s (%s): %s" % (main_path, "the main slurm.conf", exc), **result)
    if content is None:
        module.fail_json(msg="%s does not exist: give path the slurm.conf slurmctld and slurmd read on this host "
                             "(a configless node has none: run the task on the controller)" % main_path, **result)
    files = {main_path: slurm_conf.conf_text(content)}
    base = slurm_conf.include_base(version)
    # Each pass reads the files the last one found Include lines for, until nothing is left unread; the
    # pass count is bounded by conf_tree's limits (every pass reads at least one new file).
    while True:
        plan = slurm_conf.plan_conf(main_path, files, settings, params["owned"], params["ours_prefix"],
                                    params["state"], base, params["keep_site"])
        if not plan["unread"]:
            break
        for item in plan["unread"]:
            if item["path"] in files:
                continue
            try:
                data = _read(item["path"])
            except (IOError, OSError) as exc:
                module.fail_json(msg="cannot read %s (%s): %s" % (
                    item["path"], "Include in %s line %d" % (item["file"], item["line"]), exc), **result)
            files[item["path"]] = None if data is None else slurm_conf.conf_text(data)

    result.update(files=plan["files"], settings=plan["settings"],
                  conflicts=[slurm_conf.describe_conflict(c) for c in plan["conflicts"]])
    if params["state"] == "present":
        if plan["problems"]:
            _fail_on_problem(module, plan["problems"], result)
        if plan["conflicts"]:
            _fail_on_conflict(module, plan["conflicts"], main_path, result)
    else:
        for problem in plan["problems"]:
            module.warn("not followed: %s" % _problem_line(problem))
        for entry in plan["elsewhere"]:
            module.warn("%s=%s in %s line %d is gpufabric's, but in a file the site includes: it stays; remove it "
                        "there" % (entry["key"], slurm_conf.shown(entry["value"]), slurm_conf.shown(entry["file"]), entry["line"]))

    if plan["changed"]:
        result["changed"] = True
        if not module.check_mode:
            _write(module, main_path, plan["text"].encode("utf-8", "surrogateescape"))
    if module._diff:
        result["diff"] = [dict(before=_display(files[main_path]), after=_display(plan["text"]),
                               before_header=main_path, after_header=main_path)] if plan["changed"] else []
    module.exit_json(**result)


if __name__ == "__main__":
    main()
