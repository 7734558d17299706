"""Issue 57 on a real machine: a PyTorch training-like loop whose every collective NCCL's Inspector times.

    python3 tests/device/inspector_job.py OUT_DIR SCENARIO [--steps N] [--delay-ms D]

One process per GPU (torch.distributed, NCCL; the Inspector's variables come from the caller's environment, the dump
folder is OUT_DIR/dumps unless the caller names one). Each step: the same matrix products on every rank (the compute of a step; twice as many in
the second half of the steps - a job's second phase), then all_reduce of three 25 MiB buckets and one 64 MiB tensor.
Scenarios (rank 1 is the slowed one; 2 GPUs or more for any but healthy):

- healthy: no rank slowed.
- sleep:   rank 1 sleeps D ms before each step's collectives (a rank late on its CPU: data loading, a stalled host).
- kernel:  rank 1 runs extra matrix products for about D ms on its GPU before each step's collectives (a competing
           kernel: its NCCL kernels start late on the GPU, as a GPU whose clocks are held down would).

While the job runs the parent records which GPU each process computes on (`nvidia-smi --query-compute-apps` and
`--query-gpu=index,pci.bus_id`: the placement the nccl_inspector module reads), and writes record.json: each rank's
pid, its step times, the scenario's settings and exit codes.
"""
import datetime
import json
import os
import signal
import subprocess
import sys
import time

SCENARIOS = ("healthy", "sleep", "kernel")
SLOW_RANK = 1
BUCKETS = (25 << 20, 25 << 20, 25 << 20, 64 << 20)   # bytes of each step's all_reduce


def _busy(torch, a, ms):
    """Matrix products on this GPU for about ``ms`` milliseconds (timed once, then repeated)."""
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    a @ a
    stop.record()
    torch.cuda.synchronize()
    each = max(start.elapsed_time(stop), 0.05)
    for ignored in range(max(1, int(ms / each))):
        a @ a


def worker(scenario, folder, steps, delay_ms):
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=300), device_id=torch.device("cuda", rank))
    tensors = [torch.ones(size // 4, device="cuda") for size in BUCKETS]
    a = torch.randn(4096, 4096, device="cuda")
    times = []
    for step in range(steps):
        begun = time.time()
        for ignored in range(4 if step < steps // 2 else 8):
            a @ a
        if rank == SLOW_RANK and scenario == "sleep":
            torch.cuda.synchronize()
            time.sleep(delay_ms / 1000.0)
        if rank == SLOW_RANK and scenario == "kernel":
            _busy(torch, a, delay_ms)
        for tensor in tensors:
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        times.append(round(time.time() - begun, 6))
        if step % 50 == 0:
            print("rank %d step %d: %.1f ms" % (rank, step, 1000 * times[-1]), flush=True)
    dist.destroy_process_group()   # the Inspector writes what is left when a communicator ends
    with open(os.path.join(folder, "rank%d.json" % rank), "w") as handle:
        json.dump({"rank": rank, "pid": os.getpid(), "step_seconds": times}, handle)


def _placement(folder):
    for name, query in (("query_compute_apps.csv", "--query-compute-apps=pid,gpu_bus_id"),
                        ("query_gpu_index_bus.csv", "--query-gpu=index,pci.bus_id")):
        try:
            out = subprocess.run(["nvidia-smi", query, "--format=csv,noheader"], capture_output=True, text=True,
                                 timeout=30, check=False).stdout
        except (OSError, subprocess.TimeoutExpired) as exc:
            out = "nvidia-smi did not answer: %s\n" % exc
        with open(os.path.join(folder, name), "w") as handle:
            handle.write(out)


def run(folder, scenario, gpus, steps, delay_ms):
    os.makedirs(os.path.join(folder, "dumps"), exist_ok=True)
    env = dict(os.environ, WORLD_SIZE=str(gpus), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(29600 + SCENARIOS.index(scenario)), PYTHONUNBUFFERED="1")
    env.setdefault("NCCL_INSPECTOR_DUMP_DIR", os.path.join(folder, "dumps"))   # the caller's folder (textfiles) wins
    procs = []
    for rank in range(gpus):
        log = open(os.path.join(folder, "rank%d.log" % rank), "w")
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", scenario, folder, str(steps), str(delay_ms)],
                                      env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)), stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True))
    started = time.time()
    record = {"scenario": scenario, "gpus": gpus, "steps": steps, "delay_ms": delay_ms, "slow_rank": SLOW_RANK,
              "pids": [proc.pid for proc in procs]}
    try:
        time.sleep(12)
        _placement(folder)
        for proc in procs:
            proc.wait(timeout=max(1, 200 - (time.time() - started)))
    except subprocess.TimeoutExpired:
        record["error"] = "the job did not end within 200 s"
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    record["seconds"] = round(time.time() - started, 1)
    record["exit_codes"] = [proc.returncode for proc in procs]
    for rank in range(gpus):
        try:
            with open(os.path.join(folder, "rank%d.json" % rank)) as handle:
                times = json.load(handle)["step_seconds"]
            record["rank%d_median_step_ms" % rank] = round(1000 * sorted(times)[len(times) // 2], 2)
        except (IOError, OSError, ValueError, KeyError, IndexError):
            record["rank%d_median_step_ms" % rank] = None
    with open(os.path.join(folder, "record.json"), "w") as handle:
        json.dump(record, handle, indent=1)
    print(json.dumps(record), flush=True)
    return record


def main():
    if sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
        return
    folder, scenario = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 300
    delay_ms = float(args[args.index("--delay-ms") + 1]) if "--delay-ms" in args else 5.0
    import torch
    gpus = torch.cuda.device_count()
    nccl = ".".join(map(str, torch.cuda.nccl.version()))
    print("torch %s, NCCL %s, %d GPUs, scenario %s" % (torch.__version__, nccl, gpus, scenario), flush=True)
    if scenario not in SCENARIOS or (scenario != "healthy" and gpus < 2):
        print("scenario %s needs 2 or more GPUs (one of %s)" % (scenario, ", ".join(SCENARIOS)))
        sys.exit(2)
    run(folder, scenario, gpus, steps, delay_ms)


if __name__ == "__main__":
    main()
