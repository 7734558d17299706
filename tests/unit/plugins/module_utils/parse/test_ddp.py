"""The DDP benchmark's output (ddp.py) on real runs from the GPU machine: 2x H200, torchrun, ResNet-50,
batch 320 per GPU (docs/benchmarks/2026-11-23-h200x2-tune/ddp/, tests/unit/fixtures/ddp/)."""
import pytest

from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import ddp
from paths import ROOT


def test_two_gpus_read_with_totals_and_the_allreduce_probe(read_fixture):
    result = ddp.parse(read_fixture("ddp", "ddp_resnet50_g2_h200x2.txt"))
    assert [r["rank"] for r in result["ranks"]] == [0, 1]
    assert result["ranks"][0]["gpu"] == "NVIDIA_H200" and result["ranks"][0]["images_per_s"] == 3133.75
    assert result["total"] == {"world_size": 2, "images_per_s": 6267.54, "per_gpu": 3133.77, "model": "resnet50",
                               "batch_size": 320}
    assert result["allreduce"] == {"bytes": 268435456, "busbw_gbps": 294.2, "algbw_gbps": 294.2}


def test_scaling_efficiency_of_the_real_runs(read_fixture):
    one = ddp.parse(read_fixture("ddp", "ddp_resnet50_g1_h200x2.txt"))["total"]["images_per_s"]
    two = ddp.parse(read_fixture("ddp", "ddp_resnet50_g2_h200x2.txt"))["total"]
    assert round(ddp.efficiency(one, two["images_per_s"], 2), 3) == 0.991
    assert ddp.judge(ddp.parse(read_fixture("ddp", "ddp_resnet50_g2_h200x2.txt")), 3000, 0.95, one) == []
    failures = ddp.judge(ddp.parse(read_fixture("ddp", "ddp_resnet50_g2_h200x2.txt")), 3500, 0.995, one)
    assert failures == ["3133.8 images/s per GPU, expected at least 3500",
                        "scaling efficiency 0.991 on 2 GPUs, expected at least 0.995"]


def test_launcher_prefixes_crlf_and_a_job_that_died_before_the_total(read_fixture):
    text = "".join("%d: %s\r\n" % (n, line) for n, line in enumerate(
        l for l in read_fixture("ddp", "ddp_resnet50_g2_h200x2.txt").splitlines() if "rank=" in l))
    result = ddp.parse(text)
    assert result["total"]["partial"] is True and result["total"]["world_size"] == 2
    assert ddp.judge(result)[0].startswith("rank 0 printed no total")


@pytest.mark.parametrize("text", ["", "Traceback (most recent call last):\n  ...\nRuntimeError: NCCL error", b"\xff\xfe\x00"])
def test_no_result_is_an_error_that_says_so(text):
    with pytest.raises(ddp.DdpParseError, match="no 'gpufabric-ddp' result line"):
        ddp.parse(text)


def test_the_benchmark_script_refuses_bad_flags():
    import importlib.util
    import os
    path = os.path.join(ROOT, "roles", "ddp_benchmark", "files", "ddp_benchmark.py")
    spec = importlib.util.spec_from_file_location("ddp_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = module.parse_args(["--world-size=16", "--batch-size=320", "--master-addr=n1", "--master-port=9901",
                              "--warmup-iterations=50", "--measured-iterations=200", "--bucket-size=25", "--model=resnet50"])
    assert (args.world_size, args.batch_size, args.bucket_size, args.model) == (16, 320, 25, "resnet50")
    with pytest.raises(SystemExit):
        module.parse_args(["--batch-size=0"])


def test_a_run_without_torch_says_what_python_said(read_fixture):
    """The role's ddp_benchmark.py on a machine without PyTorch (captured here): the report quotes the error."""
    stderr = read_fixture("ddp", "no_torch_stderr.txt")
    result = ddp.report([{"world_size": 1, "round": 1, "stdout": "", "stderr": stderr, "rc": 1}])
    (failure,) = result["failures"]
    assert failure.endswith("(exit 1; it said: ModuleNotFoundError: No module named 'torch')"), failure
    assert "No module named 'torch'" in result["markdown"]
