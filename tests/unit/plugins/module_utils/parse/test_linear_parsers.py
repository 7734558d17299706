"""No parser backtracks on a long line: each gets 100,000-character lines of the shapes that make a
regular expression with overlapping repetitions take quadratic time (a run of spaces between two
words, a key and a colon followed by spaces, a prefix repeated, an unterminated escape), placed where
the parser is deepest in its input (inside a port block, after a table header, ...).

Each parser runs in its own process with a 20 s limit: a linear parser needs milliseconds, the
quadratic ones this replaced needed minutes (ibv_devinfo's 'key: <40,000 spaces> x' took 11 s).
This is a guard against a hang, not a speed target (those are in `make bench`)."""

import json
import subprocess
import sys

import pytest
from paths import COLLECTIONS

N = 100000

# parser call (the long text is `t`) -> the lines around the long line that bring the parser to its deepest state.
PARSERS = {
    "rdma.parse_ibv_devinfo": ("rdma.parse_ibv_devinfo(t)", "hca_id:\tmlx5_0\n\ttransport:\t\tInfiniBand (0)\n"
                               "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tGID[  0]:\t\tfe80::1\n"),
    "rdma.parse_state": ("rdma.parse_state(t)", ""),
    "rdma.parse_rate_gbps": ("rdma.parse_rate_gbps(t)", ""),
    "gpu.parse_nvidia_topo": ("gpu.parse_nvidia_topo(t)", "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\n"
                              "GPU0\t X \tNV18\tSYS\t0-47\t0\n"),
    "gpu.nvidia_smi_root": ("gpu.nvidia_smi_root('<nvidia_smi_log><x>' + t.replace('<', ' ') + '</x></nvidia_smi_log>')", ""),
    "gpu.nvcc_gencode": ("gpu.nvcc_gencode(t)", "9.0\n"),
    "gpu.parse_peermem": ("gpu.parse_peermem(t)", "nvidia_peermem 16384 0 - Live 0x0\n"),
    "kernel_log.parse_xid_events": ("kernel_log.parse_xid_events(t)", "NVRM: Xid (PCI:0000:b3:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"),
    "kernel_log.parse_fabric_events": ("kernel_log.parse_fabric_events(t)",
                                       "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 63 LTSSM Fault Up\n"
                                       "NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!\n"
                                       "mlx5_core 0000:b3:00.1: 63.008 Gb/s available PCIe bandwidth, limited by 8 GT/s x8 "
                                       "link at 0000:b2:00.0 (capable of 252.048 Gb/s with 16 GT/s x16 link)\n"),
    "nccl_conf.parse_nccl_conf": ("nccl_conf.parse_nccl_conf(t)", "NCCL_DEBUG=WARN\n"),
    "nccl_tests.parse": ("nccl_tests.parse(t)", "# nThread 1 nGpus 1\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] GPU\n"
                         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                         "         1024           256     float     sum      -1     8.52    0.12    0.00       0     0.58    1.76    0.00       0\n"),
    "perftest.parse": ("perftest.parse(t)", "                    RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_0\n"),
    "netconf.parse_mlnx_qos": ("netconf.parse_mlnx_qos(t)", "Priority trust state: dscp\nPFC configuration:\n"),
    "netconf.device_irqs": ("netconf.device_irqs(t, '0000:01:00.0', 'eth0')", "  99:  0  mlx5_comp0@pci:0000:01:00.0\n"),
    "netconf.networkd_network_file": ("netconf.networkd_network_file(t)", "Network File: /etc/systemd/network/x.network\n"),
    "netconf.parse_cpulist": ("netconf.parse_cpulist(t.strip().split()[0][:64] or '0')", ""),
    "netconf.ifupdown_set_mtu": ("netconf.ifupdown_set_mtu(t, 'eth0', 9000)", "auto eth0\niface eth0 inet dhcp\n"),
    "slurm_jobs.parse_job_record": ("slurm_jobs.parse_job_record('JobId=1 ' + t)", ""),
    "slurm_jobs.parse_submit": ("slurm_jobs.parse_submit(t + '\\n42')", ""),
    "slurm_jobs.parse_sacct": ("slurm_jobs.parse_sacct(t, '1')", "1|job|COMPLETED|0:0|n1|00:00:01|comp\n"),
    "slurm_jobs.duration_seconds": ("slurm_jobs.duration_seconds(t)", ""),
    "slurm_jobs.expand_hostlist": ("slurm_jobs.expand_hostlist(t.strip()[:N])", ""),
    "slurm_conf.parse_conf": ("slurm_conf.parse_conf(t)", "ClusterName=c\nInclude x.conf\n"),
    "slurm_conf.plan_conf": ("slurm_conf.plan_conf('/s/slurm.conf', {'/s/slurm.conf': t, '/s/x.conf': t}, {'Prolog': '/g-p'}, "
                             "ours_prefix='/g-', base='main')", "ClusterName=c\nInclude x.conf\n"),
    "nccl.default_route_interface": ("nccl.default_route_interface(t)", "Iface\tDestination\tGateway\n"),
    "numbers.leading_number": ("numbers.leading_number(t)", ""),
    "text.launcher_lines": ("text.launcher_lines(t)", "[1,0]<stdout>:x\n"),
    "text.describe_unsafe": ("text.describe_unsafe(t)", ""),
    "k8s.node_labels": ("k8s.node_labels({'rdma_devices': [], 'gpu': {'count': 1}, 'hostname': t[:63]})", ""),
    "nccl_inspector.json_lines": ("nccl_inspector.parse_nccl_inspector([{'name': 'h-pid1.log', 'content': t}])",
                                  '{"header":{"id":"0x1","rank":0,"n_ranks":2,"nnodes":1},"metadata":{},'
                                  '"coll_perf":{"coll":"AllReduce","coll_sn":1,"coll_exec_time_us":5}}\n{\n'),
    "nccl_inspector.textfile": ("nccl_inspector.parse_nccl_inspector([{'name': 'm.prom', 'content': t}])",
                                'nccl_bus_bandwidth_gbs{node="n",gpu="GPU0",comm_name="c",nranks="2"} 1\n'),
    "dcgm.parse_dcgmi_diag": ("dcgm.parse_dcgmi_diag(t)", "| Diagnostic                | Result      |\n"
                              "|-----  Stress  ------------+-------------|\n| Targeted Power | Pass - GPUs: 0, 2 |\n"
                              "| Warning                   | GPU 1 Max p |\n"),
}

SHAPES = {
    "spaces": "a" + " " * N + "b",
    "sxid_prefix": "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 1, " * (N // 48),
    "pcie_prefix": "mlx5_core 0000:b3:00.1: 63.008 Gb/s available PCIe bandwidth, limited by 8 GT/s x8 link at " + "a" * N,
    "recovery": "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (" + " " * N,
    "key_spaces": "  state:" + " " * N + "x",
    "value_spaces": "\t\t\tnode_guid: a" + " " * N + "b",
    "gid_spaces": "\t\t\tGID[  1]:\t\tfe80::2" + " " * N + ", RoCE v2 x",
    "rank_spaces": "#  Rank  1 Group  0 Pid 2 on h device  1 [0x2] G" + " " * N + "x",
    "digits": "1" * N,
    "letters": "Atomic" + "a" * N + "!",
    "colons": ":" * N,
    "pid": "pid=" * (N // 4),
    "brackets": "[" * N,
    "escape": "\x1b[" * (N // 2),
    "labels": "0: " * (N // 3),
    "tabs": "\t" * N + "x",
    "hash_spaces": "#" + " " * N + "x",
    "equals": "A=" * (N // 2),
    "enabled": "enabled:" + " " * N + "x",
    "ranges": "n[" + "1-2," * (N // 4) + "3]",
    "backslashes": "A=" + "\\" * N + "#" * N,
    "quotes": 'A="' + "a " * (N // 2),
    "table_cell": "|" + " " * N + "| Fail - GPU:" + " " * N + "|",
    "section": "|-----" + " " * N + "Stress" + " " * N + "---+",
    "ray_label": "(" + "a, b=c " * (N // 7) + "pid=1) x",
    "ray_dedup": " [repeated 1x across cluster]" * (N // 30) + " (Ray deduplicates logs by default." + "a" * N,
    "torchrun_label": "[default" + "0" * N + "]:x",
    "torchrun_labels": "[rank0]:" * (N // 8),
}

RUNNER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufabric.rdma.plugins.module_utils.common import numbers, text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import dcgm, gpu, kernel_log, nccl_conf, nccl_inspector, nccl_tests
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import perftest, rdma, slurm_conf, slurm_jobs
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import k8s, nccl, netconf
call, context, shapes = json.loads(sys.stdin.read())
N = 100000
times = {}
for name, line in shapes.items():
    t = context + line + "\n" + context
    started = time.time()
    try:
        eval(call)
    except ValueError:
        pass  # refusing the line with a message is fine; taking for ever is not
    times[name] = round(time.time() - started, 3)
print(json.dumps(times))
"""


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_a_100000_character_line_takes_linear_time(parser):
    call, context = PARSERS[parser]
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER, COLLECTIONS], input=json.dumps([call, context, SHAPES]),
                              capture_output=True, text=True, timeout=20, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("%s did not finish 100,000-character lines within 20 s: a regular expression backtracks" % parser)
    assert proc.returncode == 0, proc.stderr[-2000:]
    times = json.loads(proc.stdout)
    assert set(times) == set(SHAPES)
