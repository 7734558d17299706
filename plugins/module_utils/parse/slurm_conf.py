# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# PRIVATE to the collection gpufabric.rdma: it may change in any release; do not import it from elsewhere.
"""slurm.conf as slurmctld and slurmd read it, Include lines followed (the slurm_conf_settings module):
each file's settings and Include lines, the Slurm release's rule for a relative Include, the tree of files
in Slurm's order, and the plan that sets or removes our settings in the main file, every other byte kept.
Pure functions, standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text as _text


# Slurm's own rules, read in SchedMD/slurm at 26.05 (line numbers there) and at the 20.11 and 22.05 tags:
# - A line is what fgets returns. Text after a "#" that an even run of "\" precedes is a comment
#   (parse_config.c _strip_comments, l. 403); then a line that ends, before white space, in an odd run
#   of "\" goes on on the next line (_strip_continuation, l. 355); then "\x" becomes "x" everywhere
#   (_strip_escapes, l. 427; all three in _get_next_line, l. 469). Errors name the first physical line.
# - A setting: blanks, the key [[:alnum:]_.]+, blanks, an optional operator (+ - * /), "=", blanks, then
#   a "quoted value" (blanks allowed, no quote) or a run of non-blank characters (keyvalue_pattern,
#   l. 93). Keys are case-insensitive (_conf_hashtbl_lookup, l. 153). A key set twice: "specified more
#   than once, latest value used" (_handle_common, l. 536), except the array keys, where every line
#   counts - Prolog and Epilog among them since 24.05 (read_config.c l. 376, commit ce7b61f6a6).
# - Include (_parse_include_directive, l. 1156): "include" compared case-insensitively from the first
#   character of the line (a blank before it makes it no Include), then blanks, then the file name: the
#   next run of non-blank characters, no quoting. Every "%c" in it becomes the ClusterName parsed so far,
#   lower-cased; no ClusterName yet fails the include (_parse_for_format, l. 1064).
# - A relative name: since 23.02 relative to the directory of the main slurm.conf (SLURM_CONF), for nested
#   includes too (read_config.c get_extra_conf_path, l. 6458; commit d890058691); from 14.11 to 22.05
#   relative to the directory of the file holding the Include line (the former _add_full_path).
# - A name with "*" is never expanded: "Slurm does not support glob parsing" and the include fails
#   (l. 1202, since 23.11.4; before, the literal name was looked for and not found).
# - A file that does not exist is retried for 60 s, then the include fails (s_p_parse_file, l. 1235); a
#   failed include fails the parse ("\"Include\" failed in file %s line %d", l. 1298) and slurmctld or
#   slurmd stops: "Unable to process configuration file" (read_config.c l. 3420).
# - Nothing stops an include loop: the parser recurses until it fails.

DEFAULT_OWNED = ("HealthCheckProgram", "Prolog")
# The keys this module writes: a letter, then letters and digits (every slurm.conf parameter is so).
CONF_KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
# Lines that define a thing rather than set a parameter (node, partition, ...), and Include.
CONF_LINE_KEYS = frozenset(["downnodes", "frontendname", "include", "nodename", "nodeset", "partitionname",
                            "poweraction", "slurmctldhost"])
# The comment on every line the module writes; a replaced line of the site's is kept after it and
# put back when the setting is removed.
OURS_MARKER = "managed by gpufabric.rdma"
_REPLACED = ", replaced: "
MAX_INCLUDE_DEPTH = 16
MAX_INCLUDES = 256
# From this release on a relative Include name is relative to the main slurm.conf's directory.
INCLUDE_BASE_CHANGED = (23, 2)

_BLANKS = " \t\n\r\f\v"  # C isspace()
_INCLUDE_RE = re.compile(r"include[ \t\n\r\f\v]+([^ \t\n\r\f\v]*)", re.IGNORECASE)
_SETTING_RE = re.compile(r"[ \t\n\r\f\v]*([A-Za-z0-9_.]+)[ \t\n\r\f\v]*([-*+/]?)=[ \t\n\r\f\v]*"
                         r"(?:\"([^\"]*)\"(?=[ \t\n\r\f\v]|$)|([^ \t\n\r\f\v]+))")
_ESCAPE_RE = re.compile(r"\\(.?)", re.DOTALL)
_VERSION_RE = re.compile(r"(?<![0-9])([0-9]{1,9})\.([0-9]{1,9})")


def conf_text(value):
    """File content (bytes or str) -> str; bytes that are not UTF-8 survive as surrogates
    (``encode("utf-8", "surrogateescape")`` gives them back), so a rewrite keeps every byte."""
    if value is None:
        return u""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if not isinstance(value, str):
        raise _text.TextError("slurm.conf text must be text, got %s" % type(value).__name__)
    return value


def shown(value):
    """A value for a message: undecodable bytes as U+FFFD, control characters dropped."""
    return _text.clean(conf_text(value).encode("utf-8", "surrogateescape").decode("utf-8", "replace"))


def _split_comment(line):
    """(the line before its comment, the comment or None): a "#" after an odd run of "\\" is text."""
    if "#" not in line:
        return line, None
    if "\\" not in line:
        cut = line.index("#")
        return line[:cut], line[cut + 1:]
    run = 0
    for index, char in enumerate(line):
        if char == "#" and run % 2 == 0:
            return line[:index], line[index + 1:]
        run = run + 1 if char == "\\" else 0
    return line, None


def _continued(body):
    """(body without its continuation "\\", True) when it ends in an odd run of "\\" (blanks after it
    allowed), else (body, False)."""
    end = len(body.rstrip(_BLANKS))
    run = end - len(body[:end].rstrip("\\"))
    if run % 2:
        return body[:end - 1], True
    return body, False


def _entry(parts, first, last, comment):
    logical = "".join(parts)
    if "\\" in logical:
        logical = _ESCAPE_RE.sub(lambda match: match.group(1), logical)
    match = _INCLUDE_RE.match(logical)
    if match:
        return {"line": first, "last": last, "include": match.group(1)} if match.group(1) else None
    match = _SETTING_RE.match(logical)
    if not match:
        return None
    value = match.group(3) if match.group(3) is not None else match.group(4)
    return {"line": first, "last": last, "key": match.group(1), "op": match.group(2), "value": value,
            "comment": comment if first == last else None}


def parse_conf(text):
    """One slurm.conf (or included file) -> its settings and Include lines in order, as Slurm reads them.

    Each entry is ``{line, last, key, op, value, comment}`` (``line``: the first physical line,
    ``last``: the last one of a continued line; ``comment``: the text after "#" of a one-line entry) or
    ``{line, last, include}`` with the file name as written. A BOM, CRLF line ends and bytes that are
    not UTF-8 are read as text; lines Slurm would reject are left out (they are not settings).
    """
    text = conf_text(text)
    if text.startswith(u"\ufeff"):
        text = text[1:]
    entries = []
    parts, first, comment = [], 0, None
    for number, line in enumerate(text.split("\n"), 1):
        body, line_comment = _split_comment(line)
        if line_comment is not None and line_comment.endswith("\r"):
            line_comment = line_comment[:-1]
        body, more = _continued(body)
        if not parts:
            first, comment = number, line_comment
        parts.append(body)
        if more:
            continue
        entry = _entry(parts, first, number, comment)
        parts = []
        if entry:
            entries.append(entry)
    if parts:
        entry = _entry(parts, first, first + len(parts) - 1, comment)
        if entry:
            entries.append(entry)
    return entries


def parse_version(text):
    """``slurmd -V`` ("slurm 24.11.5", "slurm-wlm 22.05.8") -> (24, 11), or None."""
    match = _VERSION_RE.search(conf_text(text))
    return (int(match.group(1)), int(match.group(2))) if match else None


def include_base(version):
    """Which directory a relative Include name is relative to in this Slurm release: "main" (the main
    slurm.conf's, 23.02 and later), "including" (the including file's, 14.11 to 22.05), None (unknown)."""
    if not version:
        return None
    return "main" if tuple(version) >= INCLUDE_BASE_CHANGED else "including"


def include_path(name, including, main, base):
    """Where Slurm looks for the file of ``Include name`` found in the file ``including``.

    An absolute name is kept. ``base`` "main": the main file's path up to its last "/" followed by the
    name (no "/": the name as is, relative to the daemon's working directory); "including": the
    including file's directory, "/", the name. See include_base().
    """
    if name.startswith("/"):
        return name
    if base == "main":
        return main[:main.rfind("/") + 1] + name
    cut = including.rfind("/")
    return (including[:cut] if cut >= 0 else including) + "/" + name


def conf_tree(main, files, base=None, max_depth=MAX_INCLUDE_DEPTH, max_includes=MAX_INCLUDES):
    """Read the main slurm.conf and what it includes, in Slurm's order, over the files read so far.

    ``files``: {path: text, or None when no such file exists}; ``base``: see include_base(); None when
    the Slurm release is unknown, and where the two rules name different files that is a problem.
    Returns ``files`` (each path once, in reading order), ``defs`` (every setting in Slurm's order, with
    its ``file``), ``problems`` ({kind, file, line, name, ...}: kind cluster, glob, ambiguous, too_many,
    depth, loop or missing) and ``unread`` ({path, file, line}: read these and call again).
    """
    parsed, seen = {}, set()
    out = {"files": [], "defs": [], "problems": [], "unread": []}
    state = {"cluster": None, "includes": 0, "stopped": False}

    def problem(kind, where, entry, **more):
        more.update(kind=kind, file=where, line=entry["line"], name=entry["include"])
        out["problems"].append(more)

    def target_of(path, entry):
        name = entry["include"]
        if "%c" in name:
            if state["cluster"] is None:
                return problem("cluster", path, entry)
            name = name.replace("%c", state["cluster"].lower())
        if "*" in name:
            return problem("glob", path, entry, path=include_path(name, path, main, base or "main"))
        if base is None:
            candidates = [include_path(name, path, main, rule) for rule in ("main", "including")]
            if posixpath.normpath(candidates[0]) != posixpath.normpath(candidates[1]):
                return problem("ambiguous", path, entry, paths=candidates)
            return candidates[0]
        return include_path(name, path, main, base)

    def visit(path, chain):
        if posixpath.normpath(path) not in seen:
            seen.add(posixpath.normpath(path))
            out["files"].append(path)
        if path not in parsed:
            parsed[path] = parse_conf(files[path])
        for entry in parsed[path]:
            if state["stopped"]:
                return
            if "include" not in entry:
                out["defs"].append(dict(entry, file=path))
                if entry["key"].lower() == "clustername":
                    state["cluster"] = entry["value"]
                continue
            target = target_of(path, entry)
            if target is None:
                continue
            state["includes"] += 1
            if state["includes"] > max_includes:
                state["stopped"] = True
                return problem("too_many", path, entry, limit=max_includes)
            normal = posixpath.normpath(target)
            if normal in chain:
                problem("loop", path, entry, path=target, chain=chain[chain.index(normal):] + [normal])
            elif len(chain) > max_depth:
                problem("depth", path, entry, path=target, limit=max_depth)
            elif target not in files:
                out["unread"].append({"path": target, "file": path, "line": entry["line"]})
            elif files[target] is None:
                problem("missing", path, entry, path=target)
            else:
                visit(target, chain + [normal])

    visit(main, [posixpath.normpath(main)])
    return out


def render_setting(key, value, replaced=None):
    """``Key=value # managed by gpufabric.rdma`` as slurm.conf reads it back: "\\" and "#" escaped, a
    value with a blank (or none) quoted; ``replaced``: the site's line it took the place of."""
    written = value.replace("\\", "\\\\").replace("#", "\\#")
    if not written or " " in written:
        written = '"%s"' % written
    return "%s=%s # %s%s" % (key, written, OURS_MARKER, _REPLACED + replaced if replaced else "")


def _marked(entry):
    return entry.get("comment") is not None and entry["comment"].strip().startswith(OURS_MARKER)


def _replaced(entry):
    """The site's line a marked line took the place of, or None."""
    if not _marked(entry):
        return None
    comment = entry["comment"]
    cut = comment.find(_REPLACED)
    return comment[cut + len(_REPLACED):] if cut >= 0 else None


def _ours(entry, ours_prefix):
    return entry["value"].startswith(ours_prefix) or _marked(entry)


def _lines(text):
    """text -> [[content, ending]] (ending "\\n", or "" for a last line without one)."""
    pieces = text.split("\n")
    lines = [[piece, "\n"] for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append([pieces[-1], ""])
    return lines


def _rewrite(text, edits, appends):
    """text with each entry's lines replaced by one line or removed ({first: (last, line or None)}) and
    the appended lines after the last; every other byte, the BOM and each line's ending kept."""
    bom = u"\ufeff" if text.startswith(u"\ufeff") else u""
    lines = _lines(text[len(bom):])
    out = []
    number = 1
    while number <= len(lines):
        if number in edits:
            last, line = edits[number]
            content, ending = lines[last - 1]
            if line is not None:
                out.append(line + ("\r" if content.endswith("\r") else "") + ending)
            number = last + 1
            continue
        out.append(lines[number - 1][0] + lines[number - 1][1])
        number += 1
    if appends:
        newline = next(("\r\n" if c.endswith("\r") else "\n" for c, e in lines if e), "\n")
        if out and not out[-1].endswith("\n"):
            out[-1] += newline
        out.extend(line + newline for line in appends)
    return bom + "".join(out)


def _original(lines, entry):
    """The site's line an entry stands on, to keep after our marker (a continued one as one line)."""
    if entry["line"] == entry["last"]:
        content = lines[entry["line"] - 1][0]
        return content[:-1] if content.endswith("\r") else content
    written = entry["value"].replace("\\", "\\\\").replace("#", "\\#")
    return "%s%s=%s" % (entry["key"], entry["op"], '"%s"' % written if " " in written or not written else written)


def _conflicts(defs, main, wanted, owned, ours_prefix, keep_site=()):
    found, seen = [], set()
    for entry in defs:
        lower = entry["key"].lower()
        if lower not in wanted or (entry["file"], entry["line"]) in seen:
            continue
        seen.add((entry["file"], entry["line"]))
        if lower in owned and entry["value"] and not entry["value"].startswith(ours_prefix):
            kind = "site_hook"
        elif entry["file"] != main:
            kind = "included"
        elif lower in keep_site and not _marked(entry) and entry["value"] != wanted[lower][1]:
            kind = "site_value"     # a site's own TopologyPlugin: the same value stays, another is not replaced
        else:
            continue
        found.append({"kind": kind, "file": entry["file"], "line": entry["line"], "key": entry["key"],
                      "value": entry["value"], "setting": wanted[lower][0], "wanted": wanted[lower][1]})
    return found


def _plan_present(text, wanted, ours_prefix):
    lines = _lines(text[1:] if text.startswith(u"\ufeff") else text)
    by_key = {}
    for entry in parse_conf(text):
        if "include" not in entry:
            by_key.setdefault(entry["key"].lower(), []).append(entry)
    edits, appends = {}, []
    for lower, (key, value) in wanted.items():
        found = by_key.get(lower)
        if not found:
            appends.append(render_setting(key, value))
            continue
        last = found[-1]
        for entry in found[:-1]:
            if _ours(entry, ours_prefix):
                edits[entry["line"]] = (entry["last"], None)
        if last["value"] == value and not last["op"]:
            continue
        replaced = _replaced(last) if _ours(last, ours_prefix) else _original(lines, last)
        edits[last["line"]] = (last["last"], render_setting(key, value, replaced))
    return _rewrite(text, edits, appends)


def _plan_absent(text, keys, ours_prefix):
    edits = {}
    for entry in parse_conf(text):
        if "include" not in entry and entry["key"].lower() in keys and _ours(entry, ours_prefix):
            edits[entry["line"]] = (entry["last"], _replaced(entry))
    return _rewrite(text, edits, [])


def _in_effect(defs, keys):
    effect = dict((key.lower(), None) for key in keys)
    for entry in defs:
        if entry["key"].lower() in effect:
            effect[entry["key"].lower()] = {"value": entry["value"], "file": entry["file"], "line": entry["line"]}
    return dict((key, effect[key.lower()]) for key in keys)


def describe_conflict(conflict):
    """``file:line Key=value`` of a conflict, as the module returns it."""
    return "%s:%d %s=%s" % (shown(conflict["file"]), conflict["line"], conflict["key"], shown(conflict["value"]))


def plan_conf(main, files, settings, owned=DEFAULT_OWNED, ours_prefix="", state="present", base=None, keep_site=()):
    """What the slurm_conf_settings module does to the main slurm.conf, from the files read so far.

    ``files``: {path: text or None} (the main file and what it includes; conf_tree() says what is still
    unread); ``settings``: {key: value} (with state absent only the keys count); ``owned``: keys whose
    value in any file must start with ``ours_prefix`` before we set them (a site's own Prolog or NHC's
    HealthCheckProgram is never replaced); ``base``: see include_base(); ``keep_site``: keys whose value in the
    main file, when a site's own (no marker of ours), is never replaced: the same value is left as it is, another
    is a conflict (kind site_value).

    present: a key we set may not be set in an included file (we edit only the main file); in the main
    file its last line is replaced in place (the site's line kept after our marker), an earlier line of
    ours is removed, and a key set nowhere is appended. absent: lines of these keys (``settings`` and
    ``owned``) whose value starts with ``ours_prefix`` or that carry our marker are removed, and a site's
    line we had replaced comes back. Every other byte of the main file stays as it was.

    Returns ``unread``, ``problems`` (conf_tree's), ``conflicts`` ({kind site_hook, site_value or included, file,
    line, key, value, setting, wanted}), ``text`` (the main file's new text), ``changed``, ``files``,
    ``settings`` (key -> {value, file, line} or None: what is in effect afterwards) and ``elsewhere``
    (with state absent: our lines in included files, which only the site may remove).
    """
    text = conf_text(files[main])
    tree = conf_tree(main, files, base)
    keys = list(settings) + [key for key in owned if key.lower() not in set(k.lower() for k in settings)]
    result = {"unread": tree["unread"], "problems": tree["problems"], "conflicts": [], "text": text,
              "changed": False, "files": tree["files"], "settings": {}, "elsewhere": []}
    if tree["unread"]:
        return result
    if state == "present":
        wanted = dict((key.lower(), (key, value)) for key, value in settings.items())
        result["conflicts"] = _conflicts(tree["defs"], main, wanted, set(k.lower() for k in owned), ours_prefix,
                                         set(k.lower() for k in keep_site))
        new = text if result["problems"] or result["conflicts"] else _plan_present(text, wanted, ours_prefix)
    else:
        lowered = set(key.lower() for key in keys)
        new = _plan_absent(text, lowered, ours_prefix)
        result["elsewhere"] = [entry for entry in tree["defs"] if entry["file"] != main
                               and entry["key"].lower() in lowered and _ours(entry, ours_prefix)]
    if new != text:
        updated = dict(files)
        updated[main] = new
        tree = conf_tree(main, updated, base)
        result.update(text=new, changed=True)
    result["settings"] = _in_effect(tree["defs"], keys)
    return result
