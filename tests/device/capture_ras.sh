#!/usr/bin/env bash
# Issue 40 on a real machine: NCCL jobs hung in known ways (healthy, hang, kill, abort), each asked through
# NCCL's RAS port by the collection's own client; every answer and the ranks' logs in one tarball.
#
#   bash tests/device/capture_ras.sh OUT_DIR
#
# Needs 2 or more GPUs, PyTorch and its NCCL (2.24 or later). NVLink multicast stays off (common.sh).
set -uo pipefail
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/device/common.sh"
work=$(mktemp -d)
timeout 540 python3 "$top/tests/device/ras_job.py" "$work/ras" "${@:2}"
echo "ras_job.py: rc=$?"
tar -C "$work" -czf "$out/ras.tar.gz" ras
