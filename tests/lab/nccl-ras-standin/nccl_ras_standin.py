"""Stand-in for an NCCL job's RAS port: speaks NCCL's client protocol and answers STATUS / VERBOSE STATUS with a reply
captured on a real job (tests/unit/fixtures/nccl_ras). No GPU, no NCCL: for Molecule and the module's tests.

    python3 nccl_ras_standin.py REPLY_FILE [--port 28028] [--address 127.0.0.1] [--silent] [--rewrite OLD=NEW ...]

--silent accepts the connection and never answers (a job whose RAS thread is stuck). --rewrite replaces a text of
the capture (the node address the GPU machine had) with another (a node of the test cluster), and says so on
stderr. Serves until killed.
"""
import argparse
import socket
import sys
import threading


def handle(conn, reply, silent, rewrites):
    with conn:
        conn.settimeout(30)
        data = b""
        try:
            while True:
                while b"\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                line, dummy, data = data.partition(b"\n")
                command = line.decode("ascii", "replace").strip().upper()
                if silent:
                    continue
                if command.startswith("CLIENT PROTOCOL "):
                    conn.sendall(b"SERVER PROTOCOL 2\n")
                elif command.startswith("TIMEOUT ") or command.startswith("SET FORMAT "):
                    conn.sendall(b"OK\n")
                elif command in ("STATUS", "VERBOSE STATUS"):
                    with open(reply, "rb") as handle_:
                        data_ = handle_.read()
                    for old, new in rewrites:
                        data_ = data_.replace(old.encode(), new.encode())
                    conn.sendall(data_)
                    return
                else:
                    conn.sendall(("ERROR: Unknown command %s\n" % command).encode())
        except OSError:
            return


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("reply")
    parser.add_argument("--port", type=int, default=28028)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--rewrite", action="append", default=[])
    args = parser.parse_args()
    rewrites = [tuple(r.split("=", 1)) for r in args.rewrite if "=" in r]
    for old, new in rewrites:
        print("replaying %s with %s in place of %s" % (args.reply, new, old), file=sys.stderr, flush=True)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((args.address, args.port))
    server.listen(16)
    print("listening on %s:%d" % server.getsockname(), flush=True)
    while True:
        conn, dummy = server.accept()
        threading.Thread(target=handle, args=(conn, args.reply, args.silent, rewrites), daemon=True).start()


if __name__ == "__main__":
    main()
