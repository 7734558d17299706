# Stand-in for NVIDIA's mlxconfig (MFT) and mstflint's mstconfig on hosts without an NVIDIA NIC (Molecule), run by the
# mlxconfig and mlxfwreset wrappers beside it (python3 standin.py <tool> <arguments>). What it prints is real: `q` replays the public capture in capture/q.txt
# beside it (tests/unit/fixtures/mlxconfig, cited in tests/unit/fixtures/README.md) with the values a `set` gave since
# (capture/state.json) in its last column; `set` prints the set block in the tools' own layout (the capture's header,
# "Next Boot  New" rows, the prompt answered by -y, "Applying... Done!" and the reboot notice); the reset prints the
# public capture in capture/reset.txt. Every call is appended to capture/log. Not simulated: a firmware - what is
# exercised is the orchestration (query, plan, drain, set, reset, certify, resume), not a NIC.
import json
import os
import re
import sys

HERE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "capture")
TOOL = sys.argv[1] if len(sys.argv) > 1 else "mlxconfig"
ROW = re.compile(r"^(\*?\s+)([A-Z][A-Za-z0-9_]*)(\s+)(.*?)\s*$")


def log(words):
    with open(os.path.join(HERE, "log"), "a") as handle:
        handle.write("%s %s\n" % (TOOL, " ".join(words)))


def state():
    try:
        with open(os.path.join(HERE, "state.json")) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def capture(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def render(old, new):
    """A value as the tool prints it: a number stays a number; 1/0 over True(1)/False(0) keep the label."""
    if re.match(r"^-?\d+$", old) or not re.match(r"^-?\d+$", new):
        return new
    return {"1": "True(1)", "0": "False(0)"}.get(new, new) if re.match(r"^(True|False)\(\d\)$", old) else new


def query():
    given = state()
    for line in capture("q.txt").splitlines():
        match = ROW.match(line)
        if match and match.group(2) in given:
            values = match.group(4).split()
            values[-1] = render(values[-1], given[match.group(2)])
            line = match.group(1) + match.group(2) + match.group(3) + "".join(v.ljust(16) for v in values)
        print(line)
    return 0


def set_values(pairs):
    given, rows, current = state(), [], {}
    for line in capture("q.txt").splitlines():
        match = ROW.match(line)
        if match:
            current[match.group(2)] = match.group(4).split()[-1]
    header = capture("q.txt").split("Configurations:")[0].rstrip("\n")
    for pair in pairs:
        name, _sep, value = pair.partition("=")
        if name not in current:   # as mlxconfig answers a setting the device does not know (fixture ..._unknown_param_cx6dx)
            print(header + "\n\nConfigurations:                              Next Boot       New")
            print("-E- Unknown Parameter: %s" % name)
            return 3
        old = given.get(name) and render(current[name], given[name]) or current[name]
        rows.append((name, old, render(current[name], value)))
    print(header)
    print("")
    print("Configurations:                              Next Boot       New")
    for name, old, new in rows:
        print("         %-35s %-15s %-15s" % (name, old, new))
    print("")
    print(" Apply new Configuration? (y/n) [n] : y")
    print("Applying... Done!")
    print("-I- Please reboot machine to load new configurations.")
    given.update((pair.partition("=")[0], pair.partition("=")[2]) for pair in pairs)
    with open(os.path.join(HERE, "state.json"), "w") as handle:
        json.dump(given, handle)
    return 0


def main(argv):
    log(argv)
    tool = TOOL
    if tool.endswith("fwreset"):
        if "reset" not in argv and "r" not in argv:
            print("-E- stand-in %s: only 'reset' is replayed" % tool)
            return 2
        sys.stdout.write(capture("reset.txt"))
        return 0
    words = [a for a in argv if a != "-y"]
    if "-d" in words:
        at = words.index("-d")
        words = words[:at] + words[at + 2:]
    if words[:1] in (["q"], ["query"]):
        return query()
    if words[:1] in (["set"], ["s"]):
        return set_values(words[1:])
    print("-E- stand-in %s: only q and set are replayed" % tool)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[2:]))
