#!/usr/bin/env python
"""A stand-in kubectl for tests: the few calls the health monitor makes, sent to the API server named
in the kubeconfig (tests/lab/kube-api-standin/server.py) as kubectl would send them.

  kubectl [--kubeconfig FILE] get node NAME -o json | get nodes -o json
  kubectl [--kubeconfig FILE] patch node NAME --type merge|json -p BODY
  kubectl [--kubeconfig FILE] get --raw PATH | delete --raw PATH | create --raw PATH -f -   (the body on stdin)
"""

import json
import os
import sys
from urllib.error import HTTPError
from urllib.request import Request, urlopen


def main(args):
    kubeconfig = os.environ.get("KUBECONFIG")
    if args[:1] == ["--kubeconfig"]:
        kubeconfig, args = args[1], args[2:]
    with open(kubeconfig) as handle:
        server = json.load(handle)["clusters"][0]["cluster"]["server"]
    if args[:2] == ["get", "nodes"] and args[2:] == ["-o", "json"]:
        request = Request(server + "/api/v1/nodes")
    elif args[:2] == ["get", "node"] and args[3:] == ["-o", "json"]:
        request = Request(server + "/api/v1/nodes/" + args[2])
    elif args[:2] == ["patch", "node"] and args[3] == "--type" and args[4] in ("merge", "json") and args[5] == "-p":
        request = Request(server + "/api/v1/nodes/" + args[2], data=args[6].encode(), method="PATCH",
                          headers={"Content-Type": "application/%s-patch+json" % args[4]})
    elif args[:2] == ["get", "--raw"] and len(args) == 3:
        request = Request(server + args[2])
    elif args[:2] == ["delete", "--raw"] and len(args) == 3:
        request = Request(server + args[2], method="DELETE")
    elif args[:2] == ["create", "--raw"] and args[3:] == ["-f", "-"]:
        request = Request(server + args[2], data=sys.stdin.read().encode(), method="POST",
                          headers={"Content-Type": "application/json"})
    else:
        sys.stderr.write("fake kubectl: %r is not a call it knows\n" % args)
        return 2
    try:
        with urlopen(request, timeout=10) as response:
            sys.stdout.write(response.read().decode())
    except HTTPError as exc:  # as kubectl says it: the API server's message, exit 1
        sys.stderr.write("Error from server (%s): %s\n" % (exc.code, json.loads(exc.read() or b"{}").get("message")))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
