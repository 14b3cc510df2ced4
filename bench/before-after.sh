#!/usr/bin/env bash
# before-after.sh: `make bench-before-after OLD=rev [NEW=rev]`. Builds logd
# at two git revisions and runs the same produce workloads against each in
# one window, alternating (old, new, new, old, ...) for ROUNDS rounds, on
# 127.0.0.1 only: one node and a 3-node cluster (acks=all, 3 replicas, one
# partition), 100 B and 1 KiB records, 1 and 4 producers, fsync always.
# It prints, per row, the median records/s of each revision and their ratio
# (new / old), and for the cluster the server CPU (user + system, from
# /proc) per acknowledged MB on the partition's leader and on a follower.
# Every run uses a fresh node or cluster. It stops what it started.
#
#   OLD=main~3 NEW=HEAD ROUNDS=3 bench/before-after.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OLD=${OLD:?set OLD to a git revision}
NEW=${NEW:-HEAD}
ROUNDS=${ROUNDS:-3}
SCALE=${SCALE:-1}
BASE=${PORT:-17500}
WORK=$(mktemp -d)
. "$ROOT/bench/lib.sh"

build() { # build REV NAME: logd of REV at $WORK/NAME/logd
  mkdir -p "$WORK/$2/src"
  git -C "$ROOT" archive "$1" | tar -x -C "$WORK/$2/src"
  (cd "$WORK/$2/src" && go build -o "$WORK/$2/logd" ./cmd/logd)
  rm -rf "$WORK/$2/src"
}
echo "building $OLD and $NEW" >&2
build "$OLD" old
build "$NEW" new

records() { python3 -c "print(max(2000, int($1 * $SCALE)))"; }
# The rows: name, record size, producers, records.
ROWS=("100B x1:100:1:$(records 300000)" "100B x4:100:4:$(records 600000)"
  "1KiB x1:1024:1:$(records 60000)" "1KiB x4:1024:4:$(records 120000)")
RESULTS=$WORK/results # lines: rev setup row records/s leaderCPUs/MB followerCPUs/MB

run_single() { # run_single REV
  BIN=$WORK/$1/logd
  local port=$BASE row name size prod n out
  for row in "${ROWS[@]}"; do
    IFS=: read -r name size prod n <<< "$row"
    rm -rf "$WORK/single"
    "$BIN" serve --data-dir "$WORK/single" --addr 127.0.0.1:$port --http-addr "" --log-level warn &
    PIDS+=($!)
    waitport $port
    out=$(timeout 900 "$BIN" bench produce --server 127.0.0.1:$port --topic t --records "$n" \
      --record-size "$size" --producers "$prod" --json | tail -1)
    python3 -c 'import json,sys; print(sys.argv[1], "1node", sys.argv[2].replace(" ", "_"), json.loads(sys.argv[3])["records_per_sec"], "-", "-")' \
      "$1" "$name" "$out" >> "$RESULTS"
    stopall
  done
}

run_cluster() { # run_cluster REV
  BIN=$WORK/$1/logd
  local row name size prod n out leader c0 c1 mb i lcpu fcpu
  for row in "${ROWS[@]}"; do
    IFS=: read -r name size prod n <<< "$row"
    rm -rf "$WORK"/n0 "$WORK"/n1 "$WORK"/n2
    # shellcheck source=start-cluster.sh
    . "$ROOT/bench/start-cluster.sh"
    start_cluster
    "$BIN" topic create t --partitions 1 --replicas 3 --server "$servers" >/dev/null
    leader=""
    for _ in $(seq 1 100); do
      leader=$("$BIN" topic describe t --json --server "$servers" 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["partitions"][0].get("leader",""))' 2>/dev/null || true)
      [ -n "$leader" ] && break; sleep 0.1
    done
    declare -a c0=()
    for i in 0 1 2; do c0[$i]=$(cpu "${pids[$i]}"); done
    out=$(timeout 900 "$BIN" bench produce --server "$servers" --topic t --records "$n" \
      --record-size "$size" --producers "$prod" --acks all --json | tail -1)
    mb=$(python3 -c "print($n * $size / 1e6)")
    lcpu=-; fcpu=-
    for i in 0 1 2; do
      c1=$(cpu "${pids[$i]}")
      per=$(python3 -c "print('%.4f' % (($c1 - ${c0[$i]}) / $mb))")
      if [ "n$((i + 1))" = "$leader" ]; then lcpu=$per; elif [ "$fcpu" = - ]; then fcpu=$per; fi
    done
    python3 -c 'import json,sys; print(sys.argv[1], "3nodes", sys.argv[2].replace(" ", "_"), json.loads(sys.argv[3])["records_per_sec"], sys.argv[4], sys.argv[5])' \
      "$1" "$name" "$out" "$lcpu" "$fcpu" >> "$RESULTS"
    stopall
  done
}

for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order=(old new); else order=(new old); fi
  for rev in "${order[@]}"; do echo "round $r: $rev, one node" >&2; run_single "$rev"; done
  for rev in "${order[@]}"; do echo "round $r: $rev, 3 nodes" >&2; run_cluster "$rev"; done
done

echo
echo "old = $OLD ($(git -C "$ROOT" rev-parse --short "$OLD")), new = $NEW ($(git -C "$ROOT" rev-parse --short "$NEW")), $ROUNDS rounds, medians"
python3 - "$RESULTS" <<'EOF'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    rev, setup, name, rps, lc, fc = line.split()
    r = rows.setdefault((setup, name), {"old": [], "new": [], "lc": {"old": [], "new": []}, "fc": {"old": [], "new": []}})
    r[rev].append(float(rps))
    if lc != "-": r["lc"][rev].append(float(lc))
    if fc != "-": r["fc"][rev].append(float(fc))
def med(v): return "%.3f" % st.median(v) if v else "-"
print("| setup | row | old records/s | new records/s | new/old | leader CPU s/MB old | new | follower CPU s/MB old | new |")
print("|---|---|---|---|---|---|---|---|---|")
for (setup, name), r in rows.items():
    o, n = st.median(r["old"]), st.median(r["new"])
    print("| %s | %s | %.0f | %.0f | %.2f | %s | %s | %s | %s |" % (setup, name.replace("_", " "), o, n, n / o,
          med(r["lc"]["old"]), med(r["lc"]["new"]), med(r["fc"]["old"]), med(r["fc"]["new"])))
EOF
