#!/usr/bin/env bash
# replication.sh: `make bench-replication`. What replication costs, in one
# run on 127.0.0.1 only: durable 1 KiB records (`logd bench produce`, fsync
# always) against one node, against a 3-node cluster (acks=all, 3 replicas)
# with one partition, and with 3 partitions (a leader on each node). It
# prints one table: throughput, its ratio to the single node, and server CPU
# (user + system of each `logd serve`, from /proc) per acknowledged GB on
# the leader and on each follower (3 partitions: per node, every node both).
# Every setup starts fresh; it stops what it started (by PID).
#
#   RECORDS=300000 bench/replication.sh
#   PROFILE=/tmp/prof bench/replication.sh   # also CPU and allocation profiles
#       of the single node and of the one-partition leader and a follower
#       (PROFILE/{single,leader,follower}.cpu, .allocs), taken over
#       PROFILE_SECONDS (default 5) of the run
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RECORDS=${RECORDS:-300000}
SIZE=${SIZE:-1024}
BASE=${PORT:-17700}
PROFILE_SECONDS=${PROFILE_SECONDS:-5}
WORK=$(mktemp -d)
BIN=${BIN:-$WORK/logd}
[ -x "$BIN" ] || (cd "$ROOT" && go build -o "$BIN" ./cmd/logd)
. "$ROOT/bench/lib.sh"

field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
gb=$(python3 -c "print($RECORDS * $SIZE / 1e9)")
perGB() { python3 -c "print('%.2f' % (($2 - $1) / $gb))"; }
faults() { awk '{print $10}' "/proc/$1/stat"; } # minor page faults so far
perMB() { python3 -c "print('%.0f' % (($2 - $1) / ($gb * 1000)))"; }
FAULTS=$WORK/faults # lines: setup: minor page faults per MB, by role
ROWS=$WORK/rows # lines: setup|MB/s|leader s/GB|follower s/GB

echo "workload: $RECORDS records of $SIZE B, 1 producer per partition, fsync always" >&2

# One node.
rm -rf "$WORK/single"
HTTP="" PPROF=()
[ -z "${PROFILE:-}" ] || { HTTP=127.0.0.1:$((BASE + 50)); PPROF=(--pprof); }
"$BIN" serve --data-dir "$WORK/single" --addr 127.0.0.1:$BASE --http-addr "$HTTP" --kafka-addr "" --log-level warn "${PPROF[@]}" &
PIDS+=($!)
waitport $BASE
prof=""
if [ -n "$HTTP" ]; then
  mkdir -p "$PROFILE"
  waitport $((BASE + 50))
  (sleep 1; curl -s -o "$PROFILE/single.cpu" "http://$HTTP/debug/pprof/profile?seconds=$PROFILE_SECONDS") &
  prof=$!
  curl -s -o "$PROFILE/single.allocs0" "http://$HTTP/debug/pprof/allocs"
fi
c0=$(cpu "${PIDS[0]}") f0=$(faults "${PIDS[0]}")
one=$(timeout 900 "$BIN" bench produce --server 127.0.0.1:$BASE --topic t --records "$RECORDS" --record-size "$SIZE" --json | tail -1)
c1=$(cpu "${PIDS[0]}") f1=$(faults "${PIDS[0]}")
echo "single node: $(perMB "$f0" "$f1")" >> "$FAULTS"
if [ -n "$prof" ]; then
  wait "$prof" || true
  curl -s -o "$PROFILE/single.allocs" "http://$HTTP/debug/pprof/allocs"
fi
echo "single node|$(field "$one" mb_per_sec)|$(perGB "$c0" "$c1")|-" >> "$ROWS"
stopall

# shellcheck source=start-cluster.sh
. "$ROOT/bench/start-cluster.sh"
leaderOf() { # leaderOf TOPIC PARTITION: the node id leading it, once there is one
  local l=""
  for _ in $(seq 1 100); do
    l=$("$BIN" topic describe "$1" --json --server "$servers" 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["partitions"][int(sys.argv[1])].get("leader",""))' "$2" 2>/dev/null || true)
    [ -n "$l" ] && break; sleep 0.1
  done
  echo "$l"
}

cluster() { # cluster PARTITIONS
  local parts=$1 i leader out lcpu fcpu
  rm -rf "$WORK"/n0 "$WORK"/n1 "$WORK"/n2
  start_cluster
  "$BIN" topic create t --partitions "$parts" --replicas 3 --server "$servers" >/dev/null
  leader=$(leaderOf t 0)
  [ "$parts" = 1 ] || sleep 3 # leaders spread
  declare -a b=()
  declare -a fb=() fe=()
  for i in 0 1 2; do b[$i]=$(cpu "${pids[$i]}") fb[$i]=$(faults "${pids[$i]}"); done
  local profs=()
  if [ -n "${PROFILE:-}" ] && [ "$parts" = 1 ]; then
    mkdir -p "$PROFILE"
    local fol=""
    for i in 0 1 2; do
      if [ "n$((i + 1))" = "$leader" ]; then role=leader; elif [ -z "$fol" ]; then role=follower; fol=1; else continue; fi
      (sleep 1; curl -s -o "$PROFILE/$role.cpu" "http://127.0.0.1:${http[$i]}/debug/pprof/profile?seconds=$PROFILE_SECONDS") &
      profs+=($!)
      curl -s -o "$PROFILE/$role.allocs0" "http://127.0.0.1:${http[$i]}/debug/pprof/allocs"
      eval "prof_$role=$i"
    done
  fi
  out=$(timeout 900 "$BIN" bench produce --server "$servers" --topic t --records "$RECORDS" --record-size "$SIZE" \
    --producers "$parts" --acks all --json | tail -1)
  declare -a e=()
  for i in 0 1 2; do e[$i]=$(cpu "${pids[$i]}") fe[$i]=$(faults "${pids[$i]}"); done
  if [ ${#profs[@]} -gt 0 ]; then
    for p in "${profs[@]}"; do wait "$p" || true; done
    for role in leader follower; do
      eval "i=\$prof_$role"
      curl -s -o "$PROFILE/$role.allocs" "http://127.0.0.1:${http[$i]}/debug/pprof/allocs"
    done
    cp "$BIN" "$PROFILE/logd"
  fi
  if [ "$parts" = 1 ]; then
    lcpu=-; fcpu=""
    for i in 0 1 2; do
      if [ "n$((i + 1))" = "$leader" ]; then lcpu=$(perGB "${b[$i]}" "${e[$i]}"); else fcpu="$fcpu${fcpu:+, }$(perGB "${b[$i]}" "${e[$i]}")"; fi
    done
    echo "3 nodes, RF 3, acks=all, 1 partition|$(field "$out" mb_per_sec)|$lcpu|$fcpu" >> "$ROWS"
    local fl="" i
    for i in 0 1 2; do
      if [ "n$((i + 1))" = "$leader" ]; then fl="leader $(perMB "${fb[$i]}" "${fe[$i]}")${fl:+, }$fl"; else fl="$fl${fl:+, }follower $(perMB "${fb[$i]}" "${fe[$i]}")"; fi
    done
    echo "3 nodes, 1 partition: $fl" >> "$FAULTS"
  else
    lcpu=""
    for i in 0 1 2; do lcpu="$lcpu${lcpu:+, }$(perGB "${b[$i]}" "${e[$i]}")"; done
    echo "3 nodes, RF 3, acks=all, $parts partitions (each node leads ~1)|$(field "$out" mb_per_sec)|per node: $lcpu|(each node is both)" >> "$ROWS"
  fi
  stopall
}

cluster 1
PROFILE_SAVED=${PROFILE:-}; PROFILE=""
cluster 3
PROFILE=$PROFILE_SAVED

echo
echo "| setup | MB/s | / single node | leader CPU s/GB | each follower CPU s/GB |"
echo "| --- | ---: | ---: | --- | --- |"
python3 - "$ROWS" <<'EOF'
import sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
single = float(rows[0][1])
for name, mbs, lc, fc in rows:
    print("| %s | %.1f | %.2f | %s | %s |" % (name, float(mbs), float(mbs) / single, lc, fc))
one = rows[0][2]
print()
print("CPU per GB relative to the single node (%s s/GB):" % one)
for name, mbs, lc, fc in rows[1:]:
    vals = [float(v) for v in (lc.replace("per node: ", "") + "," + fc).replace("(each node is both)", "").split(",") if v.strip() not in ("", "-")]
    print("  %s: %s" % (name, ", ".join("%.2fx" % (v / float(one)) for v in vals)))
EOF
echo
echo "minor page faults per MB produced (memory touched for the first time):"
sed 's/^/  /' "$FAULTS"
if [ -n "${PROFILE:-}" ]; then echo; echo "profiles in $PROFILE: go tool pprof $PROFILE/logd $PROFILE/leader.cpu" >&2; fi
