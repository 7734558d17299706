#!/usr/bin/env bash
# The DDP benchmark (roles/ddp_benchmark/files/ddp_benchmark.py) on 1 GPU and on every GPU of the machine,
# interleaved (1, N, 1, N), with seed 004's flags except fewer measured iterations.
#
#   bash tests/device/ddp_scaling.sh OUT_DIR
set -euo pipefail
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
. tests/device/common.sh
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
flags=(--batch-size=320 --warmup-iterations=30 --measured-iterations=100 --bucket-size=25 --model=resnet50)
for round in 1 2; do
  for n in 1 "$ngpu"; do
    log="$out/ddp_g${n}_round${round}.txt"
    echo "+ torchrun --standalone --nproc_per_node=$n roles/ddp_benchmark/files/ddp_benchmark.py --world-size=$n ${flags[*]}" | tee "$log"
    torchrun --standalone --nproc_per_node="$n" roles/ddp_benchmark/files/ddp_benchmark.py --world-size="$n" "${flags[@]}" \
      >>"$log" 2>&1 || { tail -n 40 "$log"; exit 1; }
    grep '^gpufabric-ddp' "$log"
  done
done
