#!/usr/bin/env bash
# Run the named test stages in order, time each, and print a table at the end.
# Every stage runs even when an earlier one failed, so one CI log shows every problem;
# the exit status is non-zero when any stage failed. Called by `make test` / `make <stage>`.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# Copy exactly the files git would ship (tracked, plus untracked ones not ignored) to $1; outside a git work tree
# (the collection's tarball unpacked), every file but the build outputs.
copy_shipped_files() {
  local dest=$1
  rm -rf "$dest" && mkdir -p "$dest"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard
  else
    find . \( -path ./build -o -path ./.venv -o -path ./vendor-src -o -path ./dist -o -name .pytest_cache \
              -o -name __pycache__ \) -prune -o \( -type f -o -type l \) -printf '%P\0'
  fi | while IFS= read -r -d '' f; do
    [[ -e "$f" ]] && printf '%s\0' "$f"
  done | xargs -0 cp --parents -t "$dest"
}

# On every core (pytest-xdist; GPUFABRIC_UNIT_WORKERS=1 for one process), the 20 slowest tests listed at the end;
# the unit tests (tests/unit) and those that run Ansible itself (tests/integration) together;
# GPUFABRIC_UNIT_TESTS="tests/unit/test_x.py ..." runs only those. The suite runs from a copy of the shipped files in a folder with nothing beside it, as a user's clone is: CI's
# checkout has a shared/ folder beside it that no clone has, and a test that reads it must fail here
# (tests/unit/test_self_contained.py says where). Only the build outputs the tests use come along: the collection
# link (made anew, to the copy) and Prometheus' tools (build/tools).
stage_unit() {
  local copy="${TMPDIR:-/tmp}/gpufabric-unit/rdma"
  copy_shipped_files "$copy"
  mkdir -p "$copy/build/collections/ansible_collections/gpufabric"
  ln -sfn "$copy" "$copy/build/collections/ansible_collections/gpufabric/rdma"
  [[ -d build/tools ]] && ln -sfn "$top/build/tools" "$copy/build/tools"
  (cd "$copy" && GPUFABRIC_CLONE_CHECK=1 ANSIBLE_COLLECTIONS_PATH="$copy/build/collections" ANSIBLE_CONFIG="$copy/ansible.cfg" \
     pytest -q -n "${GPUFABRIC_UNIT_WORKERS:-auto}" --dist worksteal --durations=20 ${GPUFABRIC_UNIT_TESTS:-tests/unit tests/integration})
}

# ansible-test insists on running inside ansible_collections/<ns>/<name>; give it a copy of
# exactly the files git would ship (tracked, plus untracked ones not ignored). The copy lives
# outside this checkout: inside it, ansible-test would ask our git and see only ignored files.
stage_sanity() {
  local base="${TMPDIR:-/tmp}/gpufabric-sanity"
  rm -rf "$base"
  copy_shipped_files "$base/ansible_collections/gpufabric/rdma"
  local dest="$base/ansible_collections/gpufabric/rdma"
  # ansible-test bootstraps each sanity venv with a get-pip.py it downloads from a host we
  # cannot reach; put the offline stand-in where it looks first.
  local pip_version cache
  pip_version=$(grep -ohE "pip='[0-9.]+'" "$(python -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py" \
                | head -n1 | grep -oE '[0-9.]+')
  cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
  mkdir -p "$(dirname "$cache")" && cp tests/lab/get_pip_offline.py "$cache"
  (cd "$dest" && ansible-test sanity --color no --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
     --requirements --skip-test shellcheck)
}

stage_lint() {
  ansible-lint --profile production --offline
}

stage_yamllint() {
  yamllint --strict .
}

# The docs site (make docs): antsibull-docs lint and reference, the guides, Sphinx with -W.
stage_docs() {
  bash docs/site/build.sh
}

stage_build() {
  pytest -q tests/packaging
}

# Scenarios side by side: they spend most of their time waiting on apt, systemd and timers, not on the two
# cores. GPUFABRIC_MOLECULE_JOBS at a time (default 3), longest first; each has its own container names and
# network, and its log in build/molecule-logs/<scenario>.log. A failed scenario's log is printed at the end,
# and a table gives each scenario's seconds. GPUFABRIC_MOLECULE_SCENARIOS="a b" runs only those.
stage_molecule() {
  local jobs="${GPUFABRIC_MOLECULE_JOBS:-3}" logs="$top/build/molecule-logs" scenario
  [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "GPUFABRIC_MOLECULE_JOBS must be a positive whole number, got '$jobs'"; return 2; }
  local -a all=() order=()
  mapfile -t all < <(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -n1 basename | sort)
  if [[ -n "${GPUFABRIC_MOLECULE_SCENARIOS:-}" ]]; then
    for scenario in $GPUFABRIC_MOLECULE_SCENARIOS; do
      [[ " ${all[*]} " == *" $scenario "* ]] || { echo "no Molecule scenario '$scenario' (have: ${all[*]})"; return 2; }
    done
    read -r -a all <<<"$GPUFABRIC_MOLECULE_SCENARIOS"
  fi
  # Longest first (seconds measured on the 2-core CI machine, tests/molecule-order.txt), the rest after them.
  while read -r scenario _; do
    [[ -n "$scenario" && "$scenario" != \#* && " ${all[*]} " == *" $scenario "* ]] && order+=("$scenario")
  done <"$top/tests/molecule-order.txt"
  for scenario in "${all[@]}"; do [[ " ${order[*]} " == *" $scenario "* ]] || order+=("$scenario"); done
  rm -rf "$logs" && mkdir -p "$logs"
  local -A pid_of=() start_of=() took=() result=()
  local running=0 next=0 rc=0 pid
  while (( next < ${#order[@]} || running > 0 )); do
    while (( running < jobs && next < ${#order[@]} )); do
      scenario=${order[$next]}; next=$((next + 1))
      echo "=== molecule test -s $scenario (log: build/molecule-logs/$scenario.log)"
      molecule test -s "$scenario" >"$logs/$scenario.log" 2>&1 </dev/null &
      pid_of[$scenario]=$!; start_of[$scenario]=$SECONDS; running=$((running + 1))
    done
    wait -n -p pid 2>/dev/null || true
    for scenario in "${!pid_of[@]}"; do
      [[ "${pid_of[$scenario]}" == "$pid" ]] || continue
      wait "$pid"; local status=$?
      took[$scenario]=$((SECONDS - start_of[$scenario])); unset "pid_of[$scenario]"; running=$((running - 1))
      if (( status == 0 )); then result[$scenario]=passed; else result[$scenario]=FAILED; rc=1; fi
      echo "=== molecule scenario $scenario ${result[$scenario]} in ${took[$scenario]} s"
    done
  done
  for scenario in "${order[@]}"; do
    [[ "${result[$scenario]}" == passed ]] && continue
    echo; echo "=== log of the failed scenario $scenario"; cat "$logs/$scenario.log"
  done
  echo; echo "=== Molecule scenarios ($jobs at a time)"
  printf '%-32s %8s  %s\n' scenario seconds result
  for scenario in "${order[@]}"; do printf '%-32s %8s  %s\n' "$scenario" "${took[$scenario]}" "${result[$scenario]}"; done
  return $rc
}

# site.yml --check --diff on fresh lab nodes: it must run to the end and change nothing on them (no MTU set,
# no package installed, no file written); check mode previews, it does not act.
lab_check_run() {
  local log="${TMPDIR:-/tmp}/gpufabric-lab-check.log" node state
  ansible-playbook -i inventories/lab playbooks/lab.yml >/dev/null || return 1
  if ! ansible-playbook -i inventories/lab playbooks/site.yml --check --diff \
       -e gpufabric_report_root="${TMPDIR:-/tmp}/gpufabric-lab-check-report" >"$log" 2>&1; then
    echo "=== site.yml --check failed on the fresh lab:"; grep -B2 -A12 -E '^(fatal|\[ERROR\])' "$log" | head -n 60
    return 1
  fi
  echo "=== site.yml --check on the fresh lab:"; awk '/PLAY RECAP/{n=1} n' "$log" | grep -E '^gpufabric-node'
  for node in gpufabric-node1 gpufabric-node2; do
    state=$(docker exec "$node" sh -c 'cat /sys/class/net/rdma0/mtu; ls /etc/nccl.conf /etc/gpufabric /root/.ssh/id_ed25519 2>/dev/null;
                                       dpkg-query -W -f="\${Status}" rdma-core openmpi-bin 2>/dev/null | grep -c "install ok"')
    if [[ "$(echo "$state" | tr '\n' ' ')" != "1500 0 " ]]; then
      echo "=== site.yml --check changed $node: $(echo "$state" | tr '\n' ' ')"; return 1
    fi
  done
  echo "=== site.yml --check changed nothing on the nodes (MTU 1500, no nccl.conf, no facts, no packages)"
}

# The first make lab's validation reports: what NCCL used in the mpirun run (the replayed socket log, as the lab's
# IB-off environment promises), the bytes per RDMA port labelled as replayed, and perftest's rail x pair table.
lab_first_reports() {
  local rc=0
  # Validation's mpirun run: what NCCL used (the replayed socket log, as the lab's IB-off environment promises)
  # and the bytes per RDMA port, labelled as replayed.
  if ! grep -q '^- mpirun across the lab: \*\*PASS\*\*: NCCL ' build/lab-report/nccl-tests/summary.md 2>/dev/null \
     || ! grep -q '^## mpirun across the lab: bytes per RDMA port during the run - REPLAYED' build/lab-report/nccl-tests/summary.md; then
    echo "=== the lab's validation report lacks what NCCL used or the per-port table:"; cat build/lab-report/nccl-tests/summary.md 2>/dev/null; rc=1
  fi
  # perftest per rail: both rails, both directions of the lab's pair, in the rail x pair table.
  if [[ $(grep -c '^| ib_write_bw | [01] | .* PASS (mlx5_\([01]\) -> mlx5_\1) | .* PASS (mlx5_\([01]\) -> mlx5_\2) |$' \
          build/lab-report/perftest/perftest.md 2>/dev/null) != 2 ]]; then
    echo "=== the lab's perftest report lacks the rail x pair table:"; cat build/lab-report/perftest/perftest.md; rc=1
  fi
  return $rc
}

# The README's first command for real: `make lab` on a fresh lab, then again, whose site.yml
# must change nothing on any node; the lab is removed afterwards either way.
stage_lab() {
  local log="${TMPDIR:-/tmp}/gpufabric-lab-second.log" rc=0
  make lab-destroy >/dev/null 2>&1
  rm -rf build/lab-report/burnin build/lab-report/burnin-search
  lab_check_run || rc=1
  make lab || rc=1
  # The first run's reports (the second measures nothing, as nothing changed):
  lab_first_reports || rc=1
  if [[ $rc -eq 0 ]]; then
    make lab >"$log" 2>&1 || { tail -n 40 "$log"; rc=1; }
    echo "=== second make lab, site.yml and burnin.yml recaps:"
    awk '/PLAY RECAP/{n++} n>=2' "$log" | grep -E '^gpufabric-node[0-9]+ +: ok=' | tee "$log.recap"
    if [[ $rc -eq 0 ]] && (! grep -q 'gpufabric-node' "$log.recap" || grep -vq ' changed=0 ' "$log.recap"); then
      echo "=== second make lab changed something:"; grep -B3 -E '^changed:' "$log" | head -n 40; rc=1
    fi
    # The burn-in ran after site.yml: one round, the lab's one pair, measured by the stand-in over mpirun.
    if ! grep -q '^PASSED: 2 hosts, 1 pairs in 1 rounds' build/lab-report/burnin/burnin.md 2>/dev/null; then
      echo "=== the lab burn-in report is missing or did not pass:"; tail -n 30 "$log"; rc=1
    fi
    # The second site.yml validated what changed - nothing: its summary says so and names each node's last validation.
    if [[ $(grep -c '^- gpufabric-node[12]: not measured again: last validated ' build/lab-report/nccl-tests/summary.md 2>/dev/null) != 2 ]]; then
      echo "=== the second run's validation report does not report both nodes from their last validation:"
      cat build/lab-report/nccl-tests/summary.md; rc=1
    fi
    # The search strategy on the same two nodes: one group (the pair) in one round.
    if ! grep -q '^PASSED: 2 hosts, 1 group runs in 1 rounds' build/lab-report/burnin-search/burnin.md 2>/dev/null; then
      echo "=== the lab's search burn-in report is missing or did not pass:"; tail -n 30 "$log"; rc=1
    fi
  fi
  make lab-destroy >/dev/null 2>&1
  return $rc
}

declare -a names=() times=() results=()
overall=0
for stage in "$@"; do
  echo
  echo "##### stage: $stage"
  t0=$SECONDS
  if "stage_$stage"; then result=ok; else result=FAILED; overall=1; fi
  names+=("$stage"); times+=($((SECONDS - t0))); results+=("$result")
done

echo
echo "##### make test summary"
printf '%-10s %8s  %s\n' stage seconds result
total=0
for i in "${!names[@]}"; do
  printf '%-10s %8s  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
  total=$((total + times[i]))
done
printf '%-10s %8s\n' total "$total"
exit $overall
