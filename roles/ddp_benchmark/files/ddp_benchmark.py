# -*- coding: utf-8 -*-
# Copyright: contributors to gpufabric.rdma
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PyTorch DDP training benchmark on synthetic data (seed 004's benchmark.py flags), plus an
all_reduce bandwidth probe through torch.distributed (the application's view of NCCL, seed 003).

    torchrun --nproc_per_node=N ddp_benchmark.py --world-size=N --batch-size=320 \
        --master-addr=HOST --master-port=9901 --warmup-iterations=50 --measured-iterations=200 \
        --bucket-size=25 --model=resnet50

Every rank prints one line, and rank 0 the totals, in a fixed format the collection parses
(module_utils/parse/ddp.py):

    gpufabric-ddp rank=R host=H gpu=NAME images_per_s=X step_ms=Y
    gpufabric-ddp total world_size=N images_per_s=X per_gpu=Y model=resnet50 batch_size=B
    gpufabric-ddp allreduce bytes=S busbw_gbps=X algbw_gbps=Y

--batch-size is per GPU. torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT;
--master-addr / --master-port / --world-size are checked against them.
"""

import argparse
import os
import socket
import sys
import time


def parse_args(argv):
    parser = argparse.ArgumentParser(description="DDP training throughput on synthetic data")
    parser.add_argument("--world-size", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=64, help="images per GPU per step")
    parser.add_argument("--master-addr", default=None)
    parser.add_argument("--master-port", type=int, default=None)
    parser.add_argument("--warmup-iterations", type=int, default=20)
    parser.add_argument("--measured-iterations", type=int, default=50)
    parser.add_argument("--bucket-size", type=int, default=25, help="DDP bucket_cap_mb")
    parser.add_argument("--model", default="resnet50", help="a torchvision.models name")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--amp", action="store_true", help="bf16 autocast")
    parser.add_argument("--allreduce-bytes", type=int, default=256 << 20, help="0 skips the probe")
    parser.add_argument("--allreduce-iterations", type=int, default=20)
    args = parser.parse_args(argv)
    for name in ("batch_size", "measured_iterations", "bucket_size", "image_size"):
        if getattr(args, name) <= 0:
            parser.error("--%s must be positive" % name.replace("_", "-"))
    if args.warmup_iterations < 0 or args.allreduce_bytes < 0:
        parser.error("--warmup-iterations and --allreduce-bytes must not be negative")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import torch
    import torch.distributed as dist
    import torchvision

    if args.master_addr:
        os.environ.setdefault("MASTER_ADDR", args.master_addr)
    if args.master_port:
        os.environ.setdefault("MASTER_PORT", str(args.master_port))
    dist.init_process_group(backend="nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.world_size is not None and args.world_size != world:
        if rank == 0:
            sys.stderr.write("gpufabric-ddp: --world-size=%d but torchrun started %d ranks\n" % (args.world_size, world))
        dist.destroy_process_group()
        return 2
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    torch.backends.cudnn.benchmark = True

    model = getattr(torchvision.models, args.model)(weights=None).to(device).to(memory_format=torch.channels_last)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local], bucket_cap_mb=args.bucket_size)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device).to(
        memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (args.batch_size,), device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            loss = loss_fn(ddp(images), labels)
        loss.backward()
        optimizer.step()

    for iteration in range(args.warmup_iterations):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    started = time.perf_counter()
    for iteration in range(args.measured_iterations):
        step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    rate = args.batch_size * args.measured_iterations / elapsed
    print("gpufabric-ddp rank=%d host=%s gpu=%s images_per_s=%.2f step_ms=%.3f" % (
        rank, socket.gethostname(), torch.cuda.get_device_name(device).replace(" ", "_"), rate,
        elapsed / args.measured_iterations * 1000), flush=True)
    total = torch.tensor([rate], device=device, dtype=torch.float64)
    dist.all_reduce(total)
    if rank == 0:
        print("gpufabric-ddp total world_size=%d images_per_s=%.2f per_gpu=%.2f model=%s batch_size=%d" % (
            world, total.item(), total.item() / world, args.model, args.batch_size), flush=True)

    if args.allreduce_bytes and world > 1:
        tensor = torch.ones(args.allreduce_bytes // 4, device=device, dtype=torch.float32)
        for iteration in range(5):
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        started = time.perf_counter()
        for iteration in range(args.allreduce_iterations):
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - started) / args.allreduce_iterations
        algbw = tensor.numel() * 4 / seconds / 1e9
        if rank == 0:
            print("gpufabric-ddp allreduce bytes=%d busbw_gbps=%.2f algbw_gbps=%.2f" % (
                tensor.numel() * 4, algbw * 2 * (world - 1) / world, algbw), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
