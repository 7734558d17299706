"""Builds docs/troubleshooting.md from the failure messages the collection prints.

The node health checks are listed from their registry (plugins/module_utils/node/checks/all.py): each check, its
node_health options, what it reads and the findings it reports, linked to their explanations. Three kinds of failure
are collected from the source, so the page cannot miss one:
- findings (check ids) that discovery, node_health and the health monitor report, with the
  severities and fix hints the code gives (plugins/module_utils/*.py, calls to finding());
- the fail and assert tasks of the roles and playbooks, with the message they print;
- the messages modules end with (fail_json(msg=...) in plugins/modules/*.py).
docs/site/troubleshooting.yml explains each finding and each role failure (what it means, what
to do), and every message of the modules it has a `modules` entry for (keyed by the message as
collected, `%s` and all). A failure without an explanation, or an explanation of a failure that no
longer exists, is an error: `make docs` and the unit test stop on it.

  python docs/site/troubleshooting.py            write docs/troubleshooting.md
  python docs/site/troubleshooting.py --check    exit 1 if the page is missing, stale or incomplete
"""

import ast
import glob
import os
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))
from ansible_collections.gpufabric.rdma.plugins.module_utils.common.findings import SEVERITIES as SEVERITY_ORDER  # noqa: E402
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge.health import XID_CATALOG  # noqa: E402  (needs `make collection`)
from ansible_collections.gpufabric.rdma.plugins.module_utils.node.checks import all as node_checks  # noqa: E402

EXPLANATIONS = os.path.join(ROOT, "docs", "site", "troubleshooting.yml")
PAGE = os.path.join(ROOT, "docs", "troubleshooting.md")


def _rel(path):
    return os.path.relpath(path, ROOT)


def _text(node):
    """The literal text of a message: a string, a '...' % args format, or an f-string, with
    the variable parts shown as <...>."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _text(node.left)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return (left or "<...>") + (right or "<...>")
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "<...>" for v in node.values)
    return None


def findings():
    """check id -> {severities, sources, hints}"""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "module_utils", "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            # Rule tables ({counter: (check, severity, ...)}, e.g. rates.RATE_RULES) report their checks too.
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Dict)
                    and getattr(node.targets[0], "id", "").endswith("_RULES")):
                for rule in node.value.values:
                    if isinstance(rule, ast.Tuple) and len(rule.elts) > 1 and all(
                            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in rule.elts[:2]):
                        entry = found.setdefault(rule.elts[0].value, {"severities": set(), "sources": set(), "hints": []})
                        entry["severities"].add(rule.elts[1].value)
                        entry["sources"].add(_rel(path))
                continue
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "finding"):
                continue
            if not (node.args and isinstance(node.args[0], ast.Constant)):
                continue
            check = node.args[0].value
            entry = found.setdefault(check, {"severities": set(), "sources": set(), "hints": []})
            severity = node.args[1] if len(node.args) > 1 else None
            if isinstance(severity, ast.Constant):
                entry["severities"].add(severity.value)
            elif isinstance(severity, ast.IfExp):
                entry["severities"].update(n.value for n in (severity.body, severity.orelse) if isinstance(n, ast.Constant))
            else:
                entry["severities"].add("by catalog")
            entry["sources"].add(_rel(path))
            hint = _text(node.args[4]) if len(node.args) > 4 else None
            if hint and hint not in entry["hints"]:
                entry["hints"].append(hint)
    return found


def _tasks(items, source):
    for task in items or []:
        if not isinstance(task, dict):
            continue
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks"):
            yield from _tasks(task.get(key), source)
        for module, field in (("ansible.builtin.fail", "msg"), ("ansible.builtin.assert", "fail_msg")):
            if module in task:
                message = (task[module] or {}).get(field) or "(assertion failed: %s)" % (task[module] or {}).get("that")
                yield {"name": task.get("name"), "message": " ".join(str(message).split()), "source": source}


def role_failures():
    """'<role or playbook>: <task name>' -> {message, source}"""
    found = {}
    paths = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")))
    paths += sorted(glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
    paths += sorted(glob.glob(os.path.join(ROOT, "playbooks", "tasks", "*.yml")))
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or []
        parts = _rel(path).split(os.sep)
        owner = parts[1] if parts[0] == "roles" else "playbook " + "/".join(parts[1:])[:-4]
        for failure in _tasks(data, _rel(path)):
            key = "%s: %s" % (owner, failure["name"])
            if key in found:
                raise SystemExit("%s and %s both fail with the task name %r: give one another name"
                                 % (found[key]["source"], failure["source"], failure["name"]))
            found[key] = failure
    return found


def module_failures():
    """module -> [message, ...]"""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))):
        name = os.path.basename(path)[:-3]
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "fail_json":
                for keyword in node.keywords:
                    text = _text(keyword.value) if keyword.arg == "msg" else None
                    if text and text not in found.setdefault(name, []):
                        found[name].append(text)
    return found


def _load_explanations():
    with open(EXPLANATIONS, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def problems(explained, checks, failures, modules=None, registry=None):
    """Sentences naming each finding, failure or message of an explained module without an
    explanation, each explanation nothing prints any more, and each finding a node health check declares
    that no code reports (``registry``: the checks, node/checks/all.py's CHECKS by default)."""
    out = []
    for item in node_checks.CHECKS if registry is None else registry:
        for check in item.findings:
            if check not in checks:
                out.append("node health check %s declares finding %s, which no code reports" % (item.name, check))
    for check in sorted(set(checks) - set(explained["findings"])):
        out.append("finding %s (%s) has no explanation in %s" % (check, ", ".join(sorted(checks[check]["sources"])), _rel(EXPLANATIONS)))
    for check in sorted(set(explained["findings"]) - set(checks)):
        out.append("%s explains finding %s, which no code reports any more" % (_rel(EXPLANATIONS), check))
    for key in sorted(set(failures) - set(explained["failures"])):
        out.append("failure '%s' (%s) has no explanation in %s" % (key, failures[key]["source"], _rel(EXPLANATIONS)))
    for key in sorted(set(explained["failures"]) - set(failures)):
        out.append("%s explains failure '%s', which no task prints any more" % (_rel(EXPLANATIONS), key))
    for name, messages in sorted((explained.get("modules") or {}).items()) if modules is not None else []:
        collected = modules.get(name, [])
        for message in collected:
            if message not in messages:
                out.append("module %s message %r has no explanation in %s" % (name, message, _rel(EXPLANATIONS)))
        for message in sorted(set(messages) - set(collected)):
            out.append("%s explains module %s message %r, which the module no longer prints"
                       % (_rel(EXPLANATIONS), name, message))
    return out


def _anchor(text):
    """The id GitHub and MyST give a heading: lower case, spaces to dashes, other punctuation dropped."""
    return "".join(c if c.isalnum() or c in "-_" else ("-" if c == " " else "") for c in text.lower())


def health_check_lines(registry, checks):
    """The node health checks as a table, from their registry: name, what it checks, options, reads, findings."""
    lines = ["## Node health checks", "",
             "`node_health` and the health monitor run these checks, in this order (the registry,",
             "`plugins/module_utils/node/checks/all.py`); a check's options are `node_health`'s and",
             "`health_monitor_checks`'. A source a check could not read is in `unreadable` (the report is then",
             "incomplete), and a check that could not run at all says why in `not_run`.", "",
             "| check | what it checks | options | what it reads | findings |", "| --- | --- | --- | --- | --- |"]
    for item in registry:
        lines.append("| `%s` | %s | %s | %s | %s |" % (
            item.name, item.summary, ", ".join("`%s`" % o.name for o in item.options) or "-",
            "; ".join("`%s`" % r for r in item.reads),
            ", ".join("[`%s`](#%s)" % (f, _anchor(f)) for f in item.findings if f in checks)))
    lines.append("")
    return lines


def _reported_by_check(registry):
    """finding -> the node health checks that declare it."""
    owners = {}
    for item in registry:
        for check in item.findings:
            owners.setdefault(check, []).append(item)
    return owners


def render(explained, checks, failures, modules, registry=None):
    registry = node_checks.CHECKS if registry is None else registry
    owners = _reported_by_check(registry)
    explained_modules = explained.get("modules") or {}
    lines = [
        "# Troubleshooting",
        "",
        "<!-- Generated by docs/site/troubleshooting.py from the collection's source and",
        "     docs/site/troubleshooting.yml; edit those, then run `make docs`. -->",
        "",
        "Every failure the collection prints is on this page: the findings of discovery, `node_health`",
        "and the health monitor (by their `check` name), the messages of the roles' own checks (by role",
        "and task name, as the play prints them), and the messages modules end with.",
        "",
    ] + health_check_lines(registry, checks) + [
        "## Findings",
        "",
        "A finding has a `check`, a `severity` (critical, warning, info), a `target`, a `detail` and a",
        "`fix_hint`. They appear in `readiness.md` (discover/site), in `node_health` results and in the",
        "health monitor's messages.",
        "",
        "| check | severity | what it means |",
        "| --- | --- | --- |",
    ]
    for check in sorted(checks):
        severities = sorted(checks[check]["severities"], key=lambda s: SEVERITY_ORDER.index(s) if s in SEVERITY_ORDER else 9)
        lines.append("| [`%s`](#%s) | %s | %s |" % (check, _anchor(check), ", ".join(severities), explained["findings"][check]["title"]))
    for check in sorted(checks):
        entry = explained["findings"][check]
        lines += ["", "### %s" % check, "", entry["meaning"].strip(), ""]
        if checks[check]["hints"]:
            lines.append("The fix hint it prints:")
            lines.append("")
            lines += ["- %s" % hint.replace("|", "\\|") for hint in checks[check]["hints"]]
            lines.append("")
        lines.append("**What to do.** " + entry["fix"].strip())
        lines.append("")
        if check == "gpu_xid":
            lines += ["| Xid | severity | meaning | action |", "| --- | --- | --- | --- |"]
            lines += ["| %d | %s | %s | %s |" % (xid, sev, meaning, action) for xid, (sev, meaning, action) in sorted(XID_CATALOG.items())]
            lines.append("")
        for item in owners.get(check, ()):
            lines.append("Node health check: [`%s`](#node-health-checks)%s." % (item.name, " (options %s)" % ", ".join(
                "`%s`" % o.name for o in item.options) if item.options else ""))
            lines.append("")
        lines.append("Reported by: %s." % ", ".join("`%s`" % s for s in sorted(checks[check]["sources"])))
    lines += ["", "## Role and playbook failures", "",
              "The play stops on the task named here; the message is printed as `msg` (templates shown as written).", ""]
    for key in sorted(failures):
        entry = explained["failures"][key]
        lines += ["### %s" % key, "", "```text", failures[key]["message"], "```", "",
                  "**Why.** " + entry["cause"].strip(), "", "**What to do.** " + entry["fix"].strip(), "",
                  "Task in `%s`." % failures[key]["source"], ""]
    lines += ["## Module errors", "",
              "Modules end with these messages (`%s`, `%d`, `%r` or `<...>` is the value at fault); each names the",
              "bad input or the command that failed. Where a module's messages are explained, why and what to do",
              "follow each.", ""]
    for name in sorted(modules):
        lines += ["### gpufabric.rdma.%s" % name, ""]
        for message in modules[name]:
            lines.append("- `%s`" % message.replace("`", "'"))
            entry = explained_modules.get(name, {}).get(message)
            if entry:
                lines += ["", "  **Why.** " + " ".join(entry["cause"].split()), "",
                          "  **What to do.** " + " ".join(entry["fix"].split()), ""]
        if lines[-1]:
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv):
    explained = _load_explanations()
    checks, failures, modules = findings(), role_failures(), module_failures()
    errors = problems(explained, checks, failures, modules)
    if errors:
        sys.stderr.write("\n".join(errors) + "\n")
        return 1
    page = render(explained, checks, failures, modules)
    if "--check" in argv:
        current = open(PAGE, encoding="utf-8").read() if os.path.exists(PAGE) else ""
        if current != page:
            sys.stderr.write("%s is stale: run `make docs` (or python docs/site/troubleshooting.py)\n" % _rel(PAGE))
            return 1
        return 0
    with open(PAGE, "w", encoding="utf-8") as handle:
        handle.write(page)
    sys.stdout.write("wrote %s: %d findings, %d role/playbook failures, %d modules\n"
                     % (_rel(PAGE), len(checks), len(failures), len(modules)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
