#!/usr/bin/env bash
# soak.sh runs the 3-process cluster torture (TestTortureCluster) once per
# seed and prints one line per seed: its verdict, the acknowledged and lost
# counts, the verdicts that failed, and where the report is. Used by
# `make torture-soak`; the environment sets it:
#   SEEDS       seeds to run (default "1 2 3 4 5 6 7 8 9 10")
#   DURATION    how long each seed runs (default 10m)
#   PARALLEL    seeds run at once (default 1: timing-sensitive faults want
#               the machine to themselves; more finds more, slower each)
#   NEMESES     fault kinds, as for `make torture` (default: the test's)
#   PARTITIONS  the workload topic's partitions (default: the test's, 3)
#   SERVE_ARGS  extra `logd serve` flags on every node, split on spaces
#               (TORTURE_SERVE_ARGS; default none)
#   QUIET       FOR/EVERY: the clients start nothing in the last FOR of
#               every EVERY (TORTURE_QUIET; default none)
#   TORTURE_KV=0 (inherited) leaves out the key-value view workload (on
#               by default); TORTURE_COMPACTED=0 leaves out the compacted
#               topic's workload
#   TXN         0: without the transactional workload (TORTURE_TXN; default 1)
#   SHARE       0: without the share-group workload, ordered: with per-key ordering (TORTURE_SHARE; default 1)
#   SOAK_DIR    where reports go (default $TMPDIR/logd-soak), a directory
#               per seed; a valid seed's node data is removed
# It exits non-zero when any seed is not valid.
set -uo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-1 2 3 4 5 6 7 8 9 10}
DURATION=${DURATION:-10m}
PARALLEL=${PARALLEL:-1}
SOAK_DIR=${SOAK_DIR:-${TMPDIR:-/tmp}/logd-soak}
mkdir -p "$SOAK_DIR"
bin="$SOAK_DIR/torture.test"
go test -c -o "$bin" ./torture/ || exit 1

one() {
  local seed=$1 dir="$SOAK_DIR/seed-$1"
  rm -rf "$dir"; mkdir -p "$dir"
  local t0=$SECONDS
  (cd torture && TORTURE_DURATION=$DURATION TORTURE_SEED=$seed TORTURE_NEMESES=${NEMESES:-} TORTURE_PARTITIONS=${PARTITIONS:-} \
    TORTURE_SERVE_ARGS="${SERVE_ARGS:-}" TORTURE_QUIET=${QUIET:-} TORTURE_TXN=${TXN:-} TORTURE_SHARE=${SHARE:-} TORTURE_REPORT_DIR=$dir "$bin" -test.run '^TestTortureCluster$' -test.count=1 -test.timeout 0 -test.v \
    >"$dir/test.out" 2>&1)
  local rc=$? verdict="NO-REPORT" summary="" bad=""
  if [ -f "$dir/report.txt" ]; then
    verdict=$(head -1 "$dir/report.txt" | awk '{print $3}')
    summary=$(awk '$1=="lost" {print $3, $5}' "$dir/report.txt")
    bad=$(awk '$2=="invalid" {printf "%s ", $1}' "$dir/report.txt")
  fi
  [ $rc -eq 0 ] && [ "$verdict" = "VALID" ] && rm -rf "$dir"/node-*/
  printf 'seed %-4s %-9s %4ds rc=%d %s%s report=%s\n' "$seed" "$verdict" $((SECONDS - t0)) "$rc" "$summary" \
    "${bad:+ invalid: $bad}" "$dir"
  [ $rc -eq 0 ] && [ "$verdict" = "VALID" ]
}

fail=0
running=0
for seed in $SEEDS; do
  one "$seed" &
  running=$((running + 1))
  if [ $running -ge "$PARALLEL" ]; then
    wait -n || fail=1
    running=$((running - 1))
  fi
done
while [ $running -gt 0 ]; do
  wait -n || fail=1
  running=$((running - 1))
done
exit $fail
