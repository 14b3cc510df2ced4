#!/usr/bin/env bash
# replication.sh: `make bench-replication`. What replication costs, on
# 127.0.0.1 only: durable 1 KiB records (`logd bench produce`, fsync
# always) against one node, against a 3-node cluster (acks=all, 3 replicas)
# with one partition, and with 3 partitions (a leader on each node). Server
# CPU is user + system of each `logd serve` (from /proc) per acknowledged
# GB, on the leader and on each follower (3 partitions: per node, every
# node both). Every setup starts fresh; it stops what it started (by PID).
#
# The three setups run ROUNDS times (default 3), alternating (single,
# 1 partition, 3 partitions, single, ...), so that a slow spell of a shared
# machine falls on all of them. The table shows the median of each cell
# across rounds; a cluster's "/ single node" and the relative-CPU lines are
# ratios taken within a round (to that round's single node), then the
# median of those, with each round's ratios listed below. Followers of the
# one-partition cluster and the nodes of the 3-partition one are sorted by
# CPU within a round before the median is taken position by position.
#
#   RECORDS=300000 ROUNDS=3 bench/replication.sh
#   PROFILE=/tmp/prof bench/replication.sh   # also CPU and allocation profiles
#       of the single node and of the one-partition leader and a follower
#       (PROFILE/{single,leader,follower}.cpu, .allocs), taken over
#       PROFILE_SECONDS (default 5) of the first round
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RECORDS=${RECORDS:-300000}
ROUNDS=${ROUNDS:-3}
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
FAULTS=$WORK/faults # lines: round: setup: minor page faults per MB, by role
ROWS=$WORK/rows # lines: round|setup|MB/s|leader s/GB (3 partitions: each node's, comma-separated)|follower s/GB, comma-separated

echo "workload: $RECORDS records of $SIZE B, 1 producer per partition, fsync always; $ROUNDS rounds" >&2

single() { # single ROUND
  rm -rf "$WORK/single"
  local HTTP="" PPROF=() prof="" c0 c1 f0 f1 one
  [ -z "${PROFILE:-}" ] || { HTTP=127.0.0.1:$((BASE + 50)); PPROF=(--pprof); }
  "$BIN" serve --data-dir "$WORK/single" --addr 127.0.0.1:$BASE --http-addr "$HTTP" --kafka-addr "" --log-level warn "${PPROF[@]}" &
  PIDS+=($!)
  waitport $BASE
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
  echo "round $1: single node: $(perMB "$f0" "$f1")" >> "$FAULTS"
  if [ -n "$prof" ]; then
    wait "$prof" || true
    curl -s -o "$PROFILE/single.allocs" "http://$HTTP/debug/pprof/allocs"
  fi
  echo "$1|single|$(field "$one" mb_per_sec)|$(perGB "$c0" "$c1")|" >> "$ROWS"
  stopall
}

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

cluster() { # cluster ROUND PARTITIONS
  local round=$1 parts=$2 i leader out lcpu fcpu
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
    echo "$round|p1|$(field "$out" mb_per_sec)|$lcpu|$fcpu" >> "$ROWS"
    local fl="" i
    for i in 0 1 2; do
      if [ "n$((i + 1))" = "$leader" ]; then fl="leader $(perMB "${fb[$i]}" "${fe[$i]}")${fl:+, }$fl"; else fl="$fl${fl:+, }follower $(perMB "${fb[$i]}" "${fe[$i]}")"; fi
    done
    echo "round $round: 3 nodes, 1 partition: $fl" >> "$FAULTS"
  else
    lcpu=""
    for i in 0 1 2; do lcpu="$lcpu${lcpu:+, }$(perGB "${b[$i]}" "${e[$i]}")"; done
    echo "$round|p$parts|$(field "$out" mb_per_sec)|$lcpu|" >> "$ROWS"
  fi
  stopall
}

PROFILE_SAVED=${PROFILE:-}
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round of $ROUNDS" >&2
  single "$round"
  cluster "$round" 1
  PROFILE="" # profiles of the first round's single node and one-partition cluster only
  cluster "$round" 3
done
PROFILE=$PROFILE_SAVED

echo
python3 - "$ROWS" "$ROUNDS" <<'EOF'
import statistics, sys
med = statistics.median
rounds = int(sys.argv[2])
by = {}  # (round, setup) -> (MB/s, leader s/GB values sorted, follower s/GB values sorted)
for line in open(sys.argv[1]):
    r, setup, mbs, lc, fc = line.rstrip("\n").split("|")
    vals = lambda s: sorted(float(v) for v in s.split(",") if v.strip() not in ("", "-"))
    by[(int(r), setup)] = (float(mbs), vals(lc), vals(fc))
rs = range(1, rounds + 1)
single = [by[(r, "single")] for r in rs]
names = {"p1": "3 nodes, RF 3, acks=all, 1 partition",
         "p3": "3 nodes, RF 3, acks=all, 3 partitions (each node leads ~1)"}

def bypos(lists):  # one sorted list per round -> the median at each position
    return [med(col) for col in zip(*lists)]

def spread(col):
    return "%.2fx (%.2f-%.2f)" % (med(col), min(col), max(col))

# Ratios within each round: a cluster's MB/s and CPU s/GB over that round's single node's.
ratio = {}
for setup in names:
    got = [by[(r, setup)] for r in rs]
    ratio[setup] = ([g[0] / s[0] for g, s in zip(got, single)],
                    [[v / s[1][0] for v in g[1]] for g, s in zip(got, single)],
                    [[v / s[1][0] for v in g[2]] for g, s in zip(got, single)])

print("| setup | MB/s | / single node | leader CPU s/GB | each follower CPU s/GB |")
print("| --- | ---: | ---: | --- | --- |")
print("| single node | %.1f | 1.00 | %.2f | - |" % (med(s[0] for s in single), med(s[1][0] for s in single)))
for setup, name in names.items():
    got = [by[(r, setup)] for r in rs]
    lc = ", ".join("%.2f" % v for v in bypos([g[1] for g in got]))
    if setup == "p3":
        lc, fc = "per node: " + lc, "(each node is both)"
    else:
        fc = ", ".join("%.2f" % v for v in bypos([g[2] for g in got]))
    print("| %s | %.1f | %.2f | %s | %s |" % (name, med(g[0] for g in got), med(ratio[setup][0]), lc, fc))
print("(median of %d rounds; \"/ single node\" is the median of the rounds' ratios)" % rounds)
print()
print("CPU per GB relative to the single node, ratio within a round, median (min-max) of %d rounds:" % rounds)
for setup, name in names.items():
    _, lead, fol = ratio[setup]
    line = ("leader " if setup == "p1" else "per node ") + ", ".join(spread(c) for c in zip(*lead))
    if fol[0]:
        line += "; followers " + ", ".join(spread(c) for c in zip(*fol))
    print("  %s: %s" % (name, line))
print()
print("each round (cluster MB/s / single node; CPU s/GB / single node's):")
for i, r in enumerate(rs):
    out = ["single node %.1f MB/s, %.2f s/GB" % (single[i][0], single[i][1][0])]
    for setup in names:
        mb, lead, fol = ratio[setup]
        s = "%s %.2f, %s %s" % ("1 partition" if setup == "p1" else "3 partitions", mb[i],
                                 "leader" if setup == "p1" else "nodes", ", ".join("%.2fx" % v for v in lead[i]))
        if fol[i]:
            s += ", followers " + ", ".join("%.2fx" % v for v in fol[i])
        out.append(s)
    print("  round %d: %s" % (r, "; ".join(out)))
EOF
echo
echo "minor page faults per MB produced (memory touched for the first time):"
sed 's/^/  /' "$FAULTS"
if [ -n "${PROFILE:-}" ]; then echo; echo "profiles in $PROFILE: go tool pprof $PROFILE/logd $PROFILE/leader.cpu" >&2; fi
