"""Issue 40 on a real machine: NCCL jobs that hang in known ways, asked through NCCL's RAS port.

    python3 tests/device/ras_job.py OUT_DIR [--hold SECONDS] [SCENARIO ...]

One process per GPU (at least 2), all-reducing a tensor in a loop through PyTorch's NCCL. At step
STOP_STEP one rank (the last) does what the scenario says; the parent then asks the RAS port of
this node with the collection's own client (plugins/module_utils/node/nccl_ras.py) at fixed delays
and writes every answer, verbose and not, with the ranks' logs, under OUT_DIR/<scenario>/.

With --hold the port is not asked: the job is held in its state (OUT_DIR/<scenario>/ready appears) until
OUT_DIR/<scenario>/done appears or SECONDS pass, for a playbook to ask it (tests/device/hang_playbook.sh).

Scenarios: healthy (nobody stops; asked while running), hang (the rank stops calling NCCL and
sleeps), kill (the rank exits), abort (the rank aborts its communicator and sleeps).
"""
import datetime
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

STOP_STEP = 30
HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "..", "..", "plugins", "module_utils", "node", "nccl_ras.py")
SCENARIOS = ("healthy", "hang", "kill", "abort")
# Seconds after the stop (or after the start, for healthy) at which the port is asked.
ASK_AT = {"healthy": (20, 35), "hang": (5, 45), "kill": (5, 45, 75), "abort": (5, 45)}


def worker(scenario, workdir):
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=900), device_id=torch.device("cuda", rank))
    x = torch.ones(1 << 20, device="cuda")
    victim = world - 1
    step = 0
    while True:
        step += 1
        if scenario != "healthy" and rank == victim and step == STOP_STEP:
            with open(os.path.join(workdir, "stopped"), "w") as handle:
                handle.write("%s %d %f\n" % (scenario, step, time.time()))
            print("rank %d: %s at step %d" % (rank, scenario, step), flush=True)
            if scenario == "kill":
                os._exit(3)
            if scenario == "abort":
                aborted = _abort(dist)
                print("rank %d: abort via %s" % (rank, aborted), flush=True)
            while True:
                time.sleep(60)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        if step % 10 == 0:
            print("rank %d step %d" % (rank, step), flush=True)
        time.sleep(0.05)


def _abort(dist):
    """Abort this process's NCCL communicator, by whichever call this PyTorch has."""
    import torch
    group = dist.group.WORLD
    try:
        group._get_backend(torch.device("cuda")).abort()
        return "ProcessGroupNCCL.abort()"
    except Exception as exc:  # pylint: disable=broad-except
        first = repr(exc)
    try:
        dist.distributed_c10d._abort_process_group(group)
        return "_abort_process_group (backend abort failed: %s)" % first
    except Exception as exc:  # pylint: disable=broad-except
        return "no abort worked: %s; %r" % (first, exc)


def _client():
    spec = importlib.util.spec_from_file_location("nccl_ras", CLIENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ask(ras, folder, label):
    answers = {}
    for verbose, fmt in ((False, "text"), (True, "text"), (True, "json")):
        name = "%s_%s" % (label, "verbose" if verbose else "status")
        if fmt != "text":
            name += "_" + fmt
        started = time.time()
        try:
            result = ras.query("127.0.0.1", timeout=40, verbose=verbose, collective_timeout=10, reply_format=fmt)
            with open(os.path.join(folder, name + ".txt"), "w") as handle:
                handle.write(result["text"])
            answers[name] = dict(ok=True, seconds=result["seconds"], server_protocol=result["server_protocol"],
                                 bytes=len(result["text"]))
        except Exception as exc:  # pylint: disable=broad-except
            answers[name] = dict(ok=False, seconds=round(time.time() - started, 3),
                                 stage=getattr(exc, "stage", None), kind=getattr(exc, "kind", None), error=str(exc))
        print("  %s: %s" % (name, json.dumps(answers[name])), flush=True)
    return answers


def run(out, scenario, gpus, ras, hold=None):
    folder = os.path.join(out, scenario)
    os.makedirs(folder, exist_ok=True)
    stopped = os.path.join(folder, "stopped")
    env = dict(os.environ, WORLD_SIZE=str(gpus), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + SCENARIOS.index(scenario)),
               NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,RAS", NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1")
    procs = []
    for rank in range(gpus):
        log = open(os.path.join(folder, "rank%d.log" % rank), "w")
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", scenario, folder],
                                      env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)),
                                      stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
    record = dict(scenario=scenario, gpus=gpus, stop_step=STOP_STEP, victim_rank=gpus - 1, asked={})
    started = time.time()
    try:
        if scenario != "healthy":
            while not os.path.exists(stopped) and time.time() - started < 180:
                time.sleep(0.5)
            if not os.path.exists(stopped):
                record["error"] = "the victim never reached step %d" % STOP_STEP
                return record
        else:
            time.sleep(15)
        origin = time.time()
        if hold:
            time.sleep(5)
            open(os.path.join(folder, "ready"), "w").close()
            while time.time() - origin < hold and not os.path.exists(os.path.join(folder, "done")):
                time.sleep(0.5)
            record["held_seconds"] = round(time.time() - origin, 1)
            return record
        for delay in ASK_AT[scenario]:
            time.sleep(max(0.0, origin + delay - time.time()))
            print("%s: asking %d s after the %s" % (scenario, delay, "stop" if scenario != "healthy" else "start"),
                  flush=True)
            record["asked"]["t%d" % delay] = _ask(ras, folder, "t%d" % delay)
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        for proc in procs:
            proc.wait()
        record["exit_codes"] = [proc.returncode for proc in procs]
        with open(os.path.join(folder, "record.json"), "w") as handle:
            json.dump(record, handle, indent=1)
    return record


def main():
    if sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        return
    out = sys.argv[1]
    args = sys.argv[2:]
    hold = None
    if args[:1] == ["--hold"]:
        hold, args = float(args[1]), args[2:]
    scenarios = args or list(SCENARIOS)
    import torch
    gpus = torch.cuda.device_count()
    print("torch %s, NCCL %s, %d GPUs" % (torch.__version__, ".".join(map(str, torch.cuda.nccl.version())), gpus),
          flush=True)
    if gpus < 2:
        print("needs 2 or more GPUs")
        sys.exit(2)
    ras = _client()
    for scenario in scenarios:
        run(out, scenario, gpus, ras, hold)


if __name__ == "__main__":
    main()
