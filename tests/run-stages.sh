#!/usr/bin/env bash
# Run the named test stages in order, time each, and print a table at the end.
# Every stage runs even when an earlier one failed, so one CI log shows every problem;
# the exit status is non-zero when any stage failed. Called by `make test` / `make <stage>`.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

stage_unit() {
  pytest -q tests/unit
}

# ansible-test insists on running inside ansible_collections/<ns>/<name>; give it a copy of
# exactly the files git would ship (tracked, plus untracked ones not ignored).
stage_sanity() {
  local dest=build/sanity/ansible_collections/gpufabric/rdma
  rm -rf build/sanity && mkdir -p "$dest"
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [[ -e "$f" ]] && printf '%s\0' "$f"
  done | xargs -0 cp --parents -t "$dest"
  (cd "$dest" && ansible-test sanity --color no --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
     --venv --skip-test shellcheck)
}

stage_lint() {
  ansible-lint --profile production --offline
}

stage_yamllint() {
  yamllint --strict .
}

stage_build() {
  pytest -q tests/build
}

stage_molecule() {
  local scenario rc=0
  for scenario in $(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -n1 basename | sort); do
    local t0=$SECONDS
    echo "=== molecule test -s $scenario"
    if molecule test -s "$scenario"; then
      echo "=== molecule scenario $scenario passed in $((SECONDS - t0)) s"
    else
      echo "=== molecule scenario $scenario FAILED after $((SECONDS - t0)) s"
      rc=1
    fi
  done
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
