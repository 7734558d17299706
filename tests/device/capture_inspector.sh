#!/usr/bin/env bash
# Issue 57 on a real machine: NCCL's Inspector built by the collection's nccl role, its cost on nccl-tests' busbw
# (without it, JSON lines, Prometheus textfiles: interleaved, repeated), its output of a real nccl-tests and PyTorch
# run, and with 2 or more GPUs a PyTorch run with rank 1 slowed (a sleep, a competing kernel) and one without - every
# capture judged by the collection's own reader and judge. Everything in OUT_DIR/inspector.tar.gz (overhead.tsv and
# summary.txt also beside it).
#
#   bash tests/device/capture_inspector.sh OUT_DIR
#
# Needs vendor-src/nccl (NVIDIA/nccl, 2.28 or later: best the tag of the NCCL the run loads - PyTorch's wheel - such
# as v2.28.9-1) and vendor-src/nccl-tests, none committed; the ansible-core wheels in vendor-src/whl (or .whl/) to
# build through the nccl role, else the plugin is built with make alone. NVLink multicast stays off (common.sh).
# STAGES (default "build overhead prom pytorch") picks stages, for a machine that gives 10 minutes a command: the
# plugin stays in /opt/nccl-inspector and nccl-tests in vendor-src/nccl-tests/build between calls on a warm machine.
# ROUNDS (default 4) interleaved rounds of the overhead runs.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
# shellcheck source=tests/device/common.sh
. tests/device/common.sh
start_capture "${1:-}"
stages=" ${STAGES:-build overhead prom pytorch} "
rounds=${ROUNDS:-4}
work=$(mktemp -d)
cap=$work/inspector
mkdir -p "$cap"
plugin=/opt/nccl-inspector/libnccl-profiler-inspector.so
nt=vendor-src/nccl-tests/build/all_reduce_perf
ngpu=$(nvidia-smi -L | grep -c '^GPU ')

say() { echo "$*" | tee -a "$cap/summary.txt"; }
finish() {
  cp "$cap/summary.txt" "$out/summary.txt" 2>/dev/null
  [[ -f $cap/overhead.tsv ]] && cp "$cap/overhead.tsv" "$out/overhead.tsv"
  tar -C "$work" -czf "$out/inspector.tar.gz" inspector
  ls -la "$out"
}
trap finish EXIT

runtime=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null || echo unknown)
source_version=$(awk '/^NCCL_(MAJOR|MINOR|PATCH)/{v=v (v?".":"") $3} END{print v}' vendor-src/nccl/makefiles/version.mk)
say "GPUs: $ngpu ($(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)); NCCL loaded: $runtime" \
    "(pip wheel, /tmp/nccl); NCCL source of the Inspector: $source_version ($(git -C vendor-src/nccl rev-parse HEAD 2>/dev/null))"
nvidia-smi -L >"$cap/nvidia-smi-L.txt"
nvidia-smi topo -m >"$cap/topo-m.txt" 2>&1

# --- 1. The plugin, built by the collection's nccl role (nccl_inspector: true), twice: the second builds nothing.
if [[ $stages == *" build "* ]]; then
  rm -rf /opt/nccl-src && cp -r vendor-src/nccl /opt/nccl-src
  if compgen -G ".whl/*.whl" >/dev/null || compgen -G "vendor-src/whl/*.whl" >/dev/null; then
    setup_ansible "$top"
    started=$SECONDS
    timeout 600 ansible-playbook tests/device/nccl_inspector.yml -e ansible_become=false -e "cuda_home=$cuda_home" \
      -e "ansible_python_interpreter=$(command -v python3)" >"$cap/nccl_role.log" 2>&1
    say "nccl role (nccl_inspector: true, twice): rc=$? in $((SECONDS - started)) s;" \
        "$(grep -E 'Build the NCCL Inspector|changed=' "$cap/nccl_role.log" | tr -s ' ' | tail -n 4 | xargs)"
  else
    for dir in /opt/nccl-src/plugins/profiler/inspector /opt/nccl-src/ext-profiler/inspector; do
      [[ -d $dir ]] && break
    done
    make -C "$dir" -j"$(nproc)" CUDA_HOME="$cuda_home" >"$cap/make_inspector.log" 2>&1
    say "make in $dir (no ansible-core wheels carried): rc=$?"
    mkdir -p /opt/nccl-inspector && cp "$dir/libnccl-profiler-inspector.so" "$plugin"
  fi
fi
if [[ ! -f $plugin ]]; then
  say "no plugin at $plugin: nothing to measure"
  exit 1
fi

# The collection's own variables (plan/nccl.py's inspector_env), on one line: json or prom, into folder $2.
mkdir -p /tmp/gf/ansible_collections/gpufabric && ln -sfn "$top" /tmp/gf/ansible_collections/gpufabric/rdma
inspector_env() {
  python3 - "$plugin" "$2" "$1" <<'PY'
import sys
sys.path.insert(0, "/tmp/gf")
from ansible_collections.gpufabric.rdma.plugins.module_utils.plan import nccl
settings = {"plugin": sys.argv[1], "dump_dir": sys.argv[2], "prom": sys.argv[3] == "prom"}
print(" ".join("%s=%s" % (name, value) for name, value, reason in nccl.inspector_env(settings)))
PY
}

# One all_reduce_perf run: one rank per GPU under mpirun where MPI is built in, else one process driving every GPU.
allreduce() {   # mode (off, json, prom), dump folder, log, nccl-tests arguments...
  local mode=$1 dir=$2 logfile=$3
  shift 3
  local vars=() xs=()
  if [[ $mode != off ]]; then
    mkdir -p "$dir"
    read -r -a vars <<<"$(inspector_env "$mode" "$dir")"
  fi
  if [[ -n $mpi_home ]]; then
    for v in "${vars[@]}" NCCL_NVLS_ENABLE=0 NCCL_DEBUG="${NCCL_DEBUG:-WARN}" NCCL_DEBUG_SUBSYS="${NCCL_DEBUG_SUBSYS:-INIT}"; do
      xs+=(-x "$v")
    done
    timeout 300 mpirun --allow-run-as-root -np "$ngpu" "${xs[@]}" -x LD_LIBRARY_PATH "$nt" "$@" -g 1 >"$logfile" 2>&1
  else
    timeout 300 env "${vars[@]}" "$nt" "$@" -g "$ngpu" >"$logfile" 2>&1
  fi
}

# --- 2. nccl-tests built against the wheel's NCCL, then its busbw without and with the Inspector, interleaved.
if [[ $stages == *" overhead "* || $stages == *" prom "* ]] && [[ ! -x $nt ]]; then
  mpi_args=()
  [[ -n $mpi_home ]] && mpi_args=(MPI=1 "MPI_HOME=$mpi_home")
  make -s -C vendor-src/nccl-tests -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl "${mpi_args[@]}" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$cap/nccl-tests-build.log" 2>&1 || say "nccl-tests build failed"
fi
if [[ $stages == *" overhead "* ]]; then
  args=(-b 8M -e 1G -f 2 -n 50 -w 5)
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,PROFILE allreduce json "$cap/probe-dumps" "$cap/probe.log" -b 8M -e 8M -n 5 -w 1
  say "probe (NCCL_DEBUG=INFO, the plugin loaded?): $(grep -icE 'inspector|profiler' "$cap/probe.log") line(s):" \
      "$(grep -iE 'inspector|profiler' "$cap/probe.log" | head -n 3 | cut -c1-200 | tr '\n' ' ')"
  printf 'round\tmode\tseconds\tavg_busbw_gbs\tbusbw_1GiB_out_of_place_gbs\ttime_1GiB_out_of_place_us\talgbw_1GiB_out_of_place_gbs\n' \
    >"$cap/overhead.tsv"
  modes=(off json prom)
  for ((r = 1; r <= rounds; r++)); do
    for ((k = 0; k < 3; k++)); do
      mode=${modes[$(((r + k) % 3))]}   # each round starts with another mode
      started=$SECONDS
      allreduce "$mode" "$work/dumps-$mode-$r" "$cap/allreduce-$mode-$r.log" "${args[@]}"
      rc=$?
      avg=$(awk '/Avg bus bandwidth/{print $NF}' "$cap/allreduce-$mode-$r.log")
      read -r big us alg < <(awk '$1 == 1073741824 {print $8, $6, $7; exit}' "$cap/allreduce-$mode-$r.log")
      printf '%d\t%s\t%d\t%s\t%s\t%s\t%s\n' "$r" "$mode" "$((SECONDS - started))" "${avg:-rc=$rc}" "${big:-}" "${us:-}" \
        "${alg:-}" >>"$cap/overhead.tsv"
    done
  done
  cp -r "$work/dumps-json-1" "$cap/nccl-tests-json-dumps"
  rm -rf "$work"/dumps-*
  python3 - "$cap/overhead.tsv" <<'PY' | tee -a "$cap/summary.txt"
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])][1:]
# One rank has no bus bandwidth (nccl-tests' factor 2(n-1)/n is 0): there the 1 GiB time and algbw are compared.
by = {}
for r, mode, seconds, avg, big, us, alg in rows:
    try:
        value = (float(avg), float(us), float(alg))
    except ValueError:
        print("round %s %s failed: %s" % (r, mode, avg))
        continue
    by.setdefault(mode, []).append(value)
names = ("avg busbw GB/s", "1 GiB out-of-place time us", "1 GiB out-of-place algbw GB/s")
for column, name in enumerate(names):
    base = statistics.median(v[column] for v in by["off"]) if by.get("off") else None
    for mode, values in sorted(by.items()):
        med = statistics.median(v[column] for v in values)
        print("overhead %s, %s: median %.2f over %d runs (min %.2f, max %.2f)%s" % (
            mode, name, med, len(values), min(v[column] for v in values), max(v[column] for v in values),
            "; %+.2f %% against off" % (100 * (med - base) / base) if base and mode != "off" else ""))
PY
fi

# --- 3. The Prometheus textfiles of a running nccl-tests (rewritten every 30 s, removed when it ends): copied at 40 s
# and 75 s.
if [[ $stages == *" prom "* ]]; then
  allreduce prom "$work/prom" "$cap/allreduce-prom-long.log" -b 64M -e 256M -f 4 -n 200000 -w 5 &
  pid=$!
  sleep 40 && mkdir -p "$cap/nccl-tests-prom-40s" && cp "$work/prom"/*.prom "$cap/nccl-tests-prom-40s/" 2>/dev/null
  sleep 35 && mkdir -p "$cap/nccl-tests-prom-75s" && cp "$work/prom"/*.prom "$cap/nccl-tests-prom-75s/" 2>/dev/null
  pkill -INT -P "$pid" 2>/dev/null
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  say "prom textfiles of a running nccl-tests: $(find "$cap"/nccl-tests-prom-* -name '*.prom' | wc -l) copied"
fi

# --- 4. PyTorch: a training-like loop with the Inspector (JSON lines), healthy; with 2 GPUs or more rank 1 slowed by
# a sleep and by a competing kernel, and the sleep once more with Prometheus textfiles (copied while it runs).
if [[ $stages == *" pytorch "* ]]; then
  scenarios=(healthy)
  ((ngpu >= 2)) && scenarios+=(sleep kernel)
  for scenario in "${scenarios[@]}"; do
    read -r -a vars <<<"$(inspector_env json "$cap/pytorch-$scenario/dumps")"
    env "${vars[@]}" timeout 240 python3 tests/device/inspector_job.py "$cap/pytorch-$scenario" "$scenario" \
      --steps 300 --delay-ms 5 >"$cap/pytorch-$scenario.log" 2>&1
    say "pytorch $scenario: rc=$? $(tail -n 1 "$cap/pytorch-$scenario.log" | cut -c1-300)"
  done
  if ((ngpu >= 2)); then
    read -r -a vars <<<"$(inspector_env prom "$work/pytorch-prom")"
    env "${vars[@]}" timeout 240 python3 tests/device/inspector_job.py "$cap/pytorch-sleep-prom" sleep --steps 3000 \
      --delay-ms 5 >"$cap/pytorch-sleep-prom.log" 2>&1 &
    pid=$!
    sleep 45 && mkdir -p "$cap/pytorch-sleep-prom/textfiles" && cp "$work/pytorch-prom"/*.prom "$cap/pytorch-sleep-prom/textfiles/" 2>/dev/null
    wait "$pid"
    say "pytorch sleep (textfiles): rc=$? $(find "$cap/pytorch-sleep-prom/textfiles" -name '*.prom' 2>/dev/null | wc -l) copied"
  fi
fi

# --- 5. Every capture read and judged by the collection's own code (parse/nccl_inspector.py, judge/stragglers.py).
python3 - "$cap" <<'PY' | tee -a "$cap/summary.txt"
import glob, json, os, sys
sys.path.insert(0, "/tmp/gf")
from ansible_collections.gpufabric.rdma.plugins.module_utils.parse import gpu, nccl_inspector
from ansible_collections.gpufabric.rdma.plugins.module_utils.judge import stragglers
cap = sys.argv[1]
folders = sorted(set(os.path.dirname(p) for p in glob.glob(os.path.join(cap, "**", "*.log"), recursive=True)
                     + glob.glob(os.path.join(cap, "**", "*.prom"), recursive=True)
                     if os.path.basename(os.path.dirname(p)) in ("dumps", "textfiles")
                     or os.path.basename(os.path.dirname(p)).startswith(("nccl-tests-json", "nccl-tests-prom"))))
for folder in folders:
    files = [{"name": os.path.basename(p), "content": open(p, "rb").read()}
             for p in sorted(glob.glob(os.path.join(folder, "*"))) if p.endswith((".log", ".prom"))]
    try:
        parsed = nccl_inspector.parse_nccl_inspector(files)
    except ValueError as exc:
        print("%s: not read: %s" % (os.path.relpath(folder, cap), exc))
        continue
    placement = {}
    apps = os.path.join(os.path.dirname(folder), "query_compute_apps.csv")
    if os.path.exists(apps):
        processes = gpu.parse_process_gpus(open(apps).read(), open(os.path.join(os.path.dirname(folder), "query_gpu_index_bus.csv")).read())
        hosts = sorted(set(r["host"] for c in parsed["communicators"] for r in c["ranks"] if r["host"]))
        placement = dict((h, {"hostnames": [h], "processes": dict((str(k), v) for k, v in processes.items())}) for h in hosts)
    judged = stragglers.nccl_stragglers(parsed, placement=placement)
    with open(os.path.join(folder, "..", os.path.basename(folder) + "-judged.json"), "w") as handle:
        json.dump({"counts": parsed["counts"], "dropped": parsed["dropped"], "problems": parsed["problems"],
                   "judged": judged}, handle, indent=1, sort_keys=True)
    print("%s: %d file(s), %s; %s: %s" % (os.path.relpath(folder, cap), len(files), parsed["counts"],
                                          judged["verdict"].upper(), judged["summary"]))
    for comm in judged["communicators"]:
        print("  %s: %s, %d compared; per rank late share %s, wait us %s, exec us %s" % (
            stragglers.comm_label(comm), comm["verdict"], comm["compared"],
            [r["late_share"] for r in comm["ranks"]], [r["wait_us"] and round(r["wait_us"]) for r in comm["ranks"]],
            [r["exec_us"] and round(r["exec_us"]) for r in comm["ranks"]]))
PY
