"""The RDMA and NVLink tools' readers on text as it is found: colours, CRLF, a BOM, stray bytes,
cut anywhere, 100,000-character lines."""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import eadm, ibdev2netdev, ibstat, nvlink, rdma_link, show_gids
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError
from paths import COLLECTIONS, FIXTURES, fixture_bytes


read = fixture_bytes


PARSERS = {
    "ibstat": ibstat.parse_ibstat, "ibdev2netdev": ibdev2netdev.parse_ibdev2netdev, "show_gids": show_gids.parse_show_gids,
    "rdma_link": rdma_link.parse_rdma_link, "eadm": eadm.parse_eadm_stat,
    "nvlink": lambda text: (nvlink.parse_nvlink_status(text), nvlink.parse_nvlink_errors(text)),
}
CASES = [(tool, name) for tool in sorted(PARSERS) for name in sorted(os.listdir(os.path.join(FIXTURES, tool)))]


def _variants(data):
    lines = data.split(b"\n")
    return {"crlf": data.replace(b"\n", b"\r\n"), "bom": b"\xef\xbb\xbf" + data,
            "ansi": b"\n".join(b"\x1b[1;32m" + line + b"\x1b[0m" if line.strip() else line for line in lines),
            "stray_bytes": b"\xff\xfe\x80 stray \xc3\x28 bytes\n" + data}


@pytest.mark.parametrize("tool, name", CASES, ids=["%s/%s" % case for case in CASES])
def test_same_facts_from_dirty_text(tool, name):
    data = read(tool, name)
    clean = PARSERS[tool](data)
    for variant, dirty in _variants(data).items():
        assert PARSERS[tool](dirty) == clean, variant


@pytest.mark.parametrize("tool, name", CASES, ids=["%s/%s" % case for case in CASES])
def test_an_output_cut_anywhere_parses_or_says_why(tool, name):
    data = read(tool, name)
    for cut in range(len(data) + 1):
        try:
            PARSERS[tool](data[:cut])
        except ToolTextError as exc:   # only a cut JSON document may be refused, with a message
            assert str(exc).startswith("rdma -j link output is not valid JSON"), str(exc)


RUNNER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import eadm, ibdev2netdev, ibstat, nvlink, rdma_link, show_gids
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse.rdma_common import ToolTextError
shapes = json.loads(sys.stdin.read())
for name, text in shapes.items():
    for parse in (ibstat.parse_ibstat, ibstat.parse_ibstatus, ibdev2netdev.parse_ibdev2netdev, show_gids.parse_show_gids,
                  rdma_link.parse_rdma_link, eadm.parse_eadm_stat, nvlink.parse_nvlink_status, nvlink.parse_nvlink_errors):
        started = time.time()
        try:
            parse(text)
        except ToolTextError:
            pass
        assert time.time() - started < 5, (name, parse.__name__)
print("ok")
"""


def test_100000_character_lines_take_linear_time():
    n = 100000
    shapes = {
        "spaces": "CA 'mlx5_0'\n\tPort 1:\n\t\tState:" + " " * n + "x",
        "ca": "CA '" + "x" * n,
        "ibstatus": "Infiniband device 'mlx5_0' port 1 status:\n\trate: " + "1" * n + " Gb/sec (" + "4X" * (n // 2),
        "arrows": "==> " * (n // 4),
        "verbose": "0000:02:00.0 mlx5_0 (" + "MT4115 - " * (n // 9) + " fw port 1 ( ==> x (Up)",
        "gids": "mlx5_0\t1\t0\t" + ":" * n + "\t10.0.0.1 v2 eth0",
        "link": "link mlx5_0/1 " + "state " * (n // 6),
        "old_link": "1/1: mlx5_0/1: caps: <" + "A, " * (n // 3),
        "json": "[" * n,
        "eadm": "Monitoring x...\n  bytes " + "1" * n + " GiB | 2 GiB\n 15:59:56  rx: " + " " * n + "0 B/s",
        "nvlink": "GPU 0: x (UUID: " + "(" * n + ")\n Link 0: " + "1" * n + " GB/s",
        "digits": "1" * n,
        "escape": "\x1b[" * (n // 2),
    }
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER, COLLECTIONS], input=json.dumps(shapes),
                              capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("a parser did not finish 100,000-character lines in 60 s: a regular expression backtracks")
    assert proc.returncode == 0, proc.stderr[-2000:]
