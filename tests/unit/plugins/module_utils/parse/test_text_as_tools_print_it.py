"""Every parser reads the same facts from a real capture as from that capture with CRLF line ends,
a UTF-8 BOM, ANSI colours on every line, bytes that are not UTF-8, or (nccl-tests) launcher labels
on every line; where a variant cannot mean the same thing, the parser fails with its own message."""

import glob
import os

import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.common import text
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu, kernel_log, nccl_tests, perftest, rdma, slurm_jobs
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import netconf
from paths import FIXTURES


def _fixtures(pattern):
    return sorted(glob.glob(os.path.join(FIXTURES, pattern)))


def crlf(data):
    return data.replace(b"\n", b"\r\n")


def bom(data):
    return b"\xef\xbb\xbf" + data


def ansi(data):
    return b"\n".join(b"\x1b[1;32m" + line + b"\x1b[0m\x1b]0;title\x07" if line.strip() else line
                      for line in data.split(b"\n"))


def stray_bytes(data):
    return b"\xff\xfe\x80 stray \xc3\x28 bytes\n" + data


def stray_bytes_xml(data):
    first, rest = data.split(b"\n", 1)
    return first + b"\n<!-- \xff\xfe\x80 -->\n" + rest


def srun_label(data):
    return b"\n".join(b"12: " + line for line in data.split(b"\n"))


def tag_output(data):
    return b"\n".join(b"Mon Nov 23 17:25:02 2026[1,0]<stdout>:" + line for line in data.split(b"\n"))


TEXT_VARIANTS = [crlf, bom, ansi, stray_bytes]
CASES = []
for path in _fixtures("ibv_devinfo/*.txt"):
    CASES.append((rdma.parse_ibv_devinfo, path, TEXT_VARIANTS))
for path in _fixtures("nvidia_smi/topo_*.txt"):
    CASES.append((gpu.parse_nvidia_topo, path, TEXT_VARIANTS))
for path in _fixtures("nvidia_smi/q_*.xml"):
    CASES.append((gpu.parse_nvidia_smi_xml, path, [crlf, bom, ansi, stray_bytes_xml]))
    CASES.append((lambda t: gpu.parse_gpu_memory_health(gpu.nvidia_smi_root(t)), path, [crlf, bom, stray_bytes_xml]))
for path in _fixtures("kernel_log/*.txt"):
    CASES.append((kernel_log.parse_xid_events, path, TEXT_VARIANTS))
    CASES.append((kernel_log.parse_fabric_events, path, TEXT_VARIANTS))
for path in _fixtures("nccl_tests/*.txt"):
    CASES.append((nccl_tests.parse, path, TEXT_VARIANTS + [srun_label, tag_output]))
for path in _fixtures("perftest/*.txt"):
    CASES.append((perftest.parse, path, TEXT_VARIANTS))
for path in _fixtures("net/mlnx_qos_*.txt"):
    CASES.append((netconf.parse_mlnx_qos, path, TEXT_VARIANTS))
CASES.append((netconf.parse_ip_link_json, os.path.join(FIXTURES, "net", "ip_link_veth.json"), [crlf, bom]))
CASES.append((lambda t: netconf.device_irqs(t, "0000:01:00.0", "enp1s0f0np0"),
              os.path.join(FIXTURES, "net", "proc_interrupts_mlx5.txt"), TEXT_VARIANTS))
for path in _fixtures("slurm/scontrol_job_*.txt"):
    CASES.append((slurm_jobs.parse_job_record, path, [crlf, bom, ansi]))
CASES = [(parser, path, variant) for parser, path, variants in CASES for variant in variants]


def _is_launcher_capture(path):
    # The launcher captures carry their own labels; labelling them again is a different text.
    return any(word in path for word in ("srun_label", "tag_output", "timestamp", "awsefaeks", "ncclebpf"))


@pytest.mark.parametrize("parser, path, variant", CASES,
                         ids=["%s-%s" % (os.path.relpath(p, FIXTURES), v.__name__) for dummy, p, v in CASES])
def test_same_facts_from_dirty_text(parser, path, variant):
    with open(path, "rb") as handle:
        data = handle.read()
    if variant in (srun_label, tag_output) and _is_launcher_capture(path):
        pytest.skip("already launcher-labelled: %s" % os.path.basename(path))
    dirty = variant(data).decode("utf-8", "replace")
    try:
        clean = parser(data.decode("utf-8"))
    except ValueError as exc:  # not that tool's output (an error text): the variant fails the same way
        with pytest.raises(type(exc), match="^%s" % str(exc)[:20].replace("(", r"\(")):
            parser(dirty)
        return
    assert parser(dirty) == clean


def test_clean_removes_what_tools_add():
    assert text.clean(b"\xef\xbb\xbfa\r\nb\rc\x1b[31md\x1b[0m\x1b]8;;http://x\x1b\\e\x00\x07f") == "a\nb\ncdef"
    assert text.clean(b"caf\xe9") == u"caf\ufffd"
    with pytest.raises(text.TextError, match="nvidia-smi output must be text, got int"):
        text.clean(5, "nvidia-smi output")


@pytest.mark.parametrize("line, stripped", [
    (" 0:      8388608       2097152     float", "     8388608       2097152     float"),
    ("12: # Avg bus bandwidth    : 142.735", "# Avg bus bandwidth    : 142.735"),
    ("[1,0]<stdout>:#  Rank  0", "#  Rank  0"),
    ("[1,12]<stderr>:Authorization required", "Authorization required"),
    ("Thu May  7 10:39:20 2020[1,1]<stdout>:Hello", "Hello"),
    ("Mon Nov 23 17:26:14 2026<stdout>:# nccl-tests", "# nccl-tests"),
    ("[prterun-f5n18-100629@1,0]<stdout>: f5n18", "f5n18"),
    ("(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  0", "#  Rank  0"),
    ("    [1,0]<stdout>:  2147483648", " 2147483648"),
    ("     8388608       2097152     float", "     8388608       2097152     float"),
    ("node005:291005:291100 [0] NCCL INFO x", "node005:291005:291100 [0] NCCL INFO x"),
    # Ray's actors and vLLM's workers (issue 52): a name, its fields, the pid and the node's address
    ("(RayTrainWorker pid=83500) localhost:83500:84560 [2] NCCL INFO x", "localhost:83500:84560 [2] NCCL INFO x"),
    ("(RayWorkerWrapper pid=627, ip=10.244.1.107) h:627:627 [1] NCCL INFO x", "h:627:627 [1] NCCL INFO x"),
    ("(pid=627, ip=10.244.1.107) INFO 04-20 16:47:14 x", "INFO 04-20 16:47:14 x"),
    ("(EngineCore_DP0 pid=2301) (RayWorkerWrapper pid=2981, ip=169.254.28.198) spark-3995:2981:3113 [0] NCCL INFO x",
     "spark-3995:2981:3113 [0] NCCL INFO x"),
    ("(VllmWorkerProcess pid=2157) x", "x"),
    ("(VllmWorker rank=1 pid=4242) x", "x"),
    ("(a note, pid=1) x", "x"),
    ("(not a label) x", "(not a label) x"),
    ("(pid=1)x", "(pid=1)x"),
    # torchrun's --tee labels and PyTorch's rank labels (issue 52), on lines of public logs: a NeMo/Megatron traceback,
    # PyTorch's warning with srun's label before it, a Megatron iteration line (search index files 70868463951,
    # 70866678965, 56729474510, 40874310894)
    ("[default0]:[rank0]: Traceback (most recent call last):", "Traceback (most recent call last):"),
    ("[rank0]:[W1004 01:37:03.229084231 ProcessGroupNCCL.cpp:1538] Warning: WARNING: destroy_process_group() was not "
     "called before program exit, which can leak resour", "[W1004 01:37:03.229084231 ProcessGroupNCCL.cpp:1538] Warning: "
     "WARNING: destroy_process_group() was not called before program exit, which can leak resour"),
    ("1: [rank0]:[W225 15:55:28.629542216 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0",
     "[W225 15:55:28.629542216 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0"),
    ("[default7]: iteration    12695/  115311 | consumed samples:      9841584", "iteration    12695/  115311 | "
     "consumed samples:      9841584"),
    ("[default0]:tp4-dp2-inference-pods-0:78:78 [0] NCCL INFO NCCL version 2.27.3+cuda12.9",
     "tp4-dp2-inference-pods-0:78:78 [0] NCCL INFO NCCL version 2.27.3+cuda12.9"),
    ("[W1004 01:37:03 x.cpp:1] x", "[W1004 01:37:03 x.cpp:1] x"),   # PyTorch's own warning tag is the line's text
    ("[0]: x", "[0]: x"),
])
def test_launcher_labels(line, stripped):
    assert text.strip_launcher(line) == stripped


@pytest.mark.parametrize("line, kept", [
    ("(RayWorkerWrapper pid=660) h:660:660 [6] NCCL INFO Using network IB [repeated 14x across cluster]",
     "h:660:660 [6] NCCL INFO Using network IB"),
    ("(pid=627, ip=10.244.1.107) INFO x. [repeated 8x across cluster] (Ray deduplicates logs by default. Set "
     "RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/ray-observability/user-guides/"
     "configure-logging.html#log-deduplication for more options.)", "INFO x."),
    ("x [repeated 8x across cluster] and more", "x [repeated 8x across cluster] and more"),
    ("x [repeated many times across cluster]", "x [repeated many times across cluster]"),
])
def test_rays_deduplication_note_is_not_part_of_the_line(line, kept):
    """Issue 52: Ray ends a line that stands for several with ' [repeated Nx across cluster]'; a parser reading the
    line's last word ('via NET/IB/0/GDRDMA', 'set by environment to SYS') read the note as part of it."""
    assert text.launcher_lines(line) == [kept]


@pytest.mark.parametrize("value, problem", [
    ("eth0", None), ("=mlx5_0:1,mlx5_3:1", None), ("", None),
    ("WARN\nNCCL_IB_HCA=x", "contains a newline (character 5)"),
    ("a\rb", "contains a carriage return (character 2)"),
    ("a\x00", "contains a NUL byte (character 2)"),
    ("a\x1b[2J", "contains the control character '\\x1b' (character 2)"),
    (u"a\u2028b", "contains the control character '\\u2028' (character 2)"),
])
def test_values_that_would_break_a_line(value, problem):
    assert text.describe_unsafe(value) == problem
