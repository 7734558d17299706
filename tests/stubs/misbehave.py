#!/usr/bin/env python
"""A stand-in for a tool on a sick node: run under any name (a link named nvidia-smi, ibv_devinfo,
journalctl, ip, ...), it does what STUB_<NAME>_MODE says (NAME upper-cased, '-' as '_'):

  hang            sleep for ever, after starting a child that sleeps too (both must be killed)
  binary          print bytes that are not UTF-8 (and NULs), exit 0
  garbage         print plausible-looking nonsense, exit 0
  truncated:PATH  print the first half of the file at PATH, exit 0
  fail:RC:TEXT    print TEXT on stderr, exit RC
  file:PATH       print the file at PATH (with STUB_<NAME>_CRLF=1 as CRLF, STUB_<NAME>_ANSI=1 coloured)

Every call is appended to $STUB_LOG as one JSON line: {"tool", "argv"}.
"""

import json
import os
import subprocess
import sys
import time


def main():
    tool = os.path.basename(sys.argv[0])
    key = "STUB_%s_" % tool.upper().replace("-", "_")
    if os.environ.get("STUB_LOG"):
        with open(os.environ["STUB_LOG"], "a") as log:
            log.write(json.dumps({"tool": tool, "argv": sys.argv[1:]}) + "\n")
    mode = os.environ.get(key + "MODE", "fail:127:%s: no mode set for this stub" % tool)
    kind, dummy, arg = mode.partition(":")
    out = sys.stdout.buffer
    if kind == "hang":
        subprocess.Popen(["sleep", "3600"])
        time.sleep(3600)
    elif kind == "binary":
        out.write(b"\x00\xff\xfe<nvidia_smi_log>\x80\x81\xc3\x28 \xde\xad\xbe\xef\n\x1b[31m\xf0\x28\x8c\xbc\n")
    elif kind == "garbage":
        out.write(b"Segmentation fault? no... 42 GPUs found; NIC0: ; <gpu id=oops>\n# size count\n1 2 3\n")
    elif kind == "truncated":
        with open(arg, "rb") as handle:
            data = handle.read()
        out.write(data[:len(data) // 2])
    elif kind == "fail":
        rc, dummy, text = arg.partition(":")
        sys.stderr.write(text + "\n")
        return int(rc)
    elif kind == "file":
        with open(arg, "rb") as handle:
            data = handle.read()
        if os.environ.get(key + "ANSI"):
            data = b"\n".join(b"\x1b[1;32m" + line + b"\x1b[0m" if line else line for line in data.split(b"\n"))
        if os.environ.get(key + "CRLF"):
            data = data.replace(b"\n", b"\r\n")
        out.write(data)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
