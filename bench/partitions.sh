#!/usr/bin/env bash
# partitions.sh: `make bench-partitions`. The cost of many idle partitions
# on 127.0.0.1 only: 3 nodes (--bootstrap / --join), one topic
# of N partitions x 3 replicas, no traffic. Once every partition has a
# leader, it produces one record to every partition (acks=all, timed), and
# once the cluster has settled it samples each node over an idle
# window: CPU (utime+stime from /proc/PID/stat, as % of one core), RSS
# (/proc/PID/status VmRSS) and descriptors (/proc/PID/fd: sockets vs the
# rest). Then it kills the node leading partition 0 (SIGKILL) and times
# until a produce to partition 0 (acks=all) through the two others is
# acknowledged: the failover time, client retries included.
# It stops what it started (by PID) and prints one Markdown table.
#
#   N=1000 IDLE=10 SETTLE=10 bench/partitions.sh
#   BIN=/tmp/logd-main N=300 bench/partitions.sh   # another build
#   PROFILE=/tmp/idle.pprof bench/partitions.sh    # also a 10s CPU profile of node 1
#   HEAP=/tmp/heap.pprof bench/partitions.sh       # and a heap profile of node 1 after it
#   SERVE_ARGS="--log-level info" bench/partitions.sh  # extra flags on every `logd serve`
#   KAFKA=1 bench/partitions.sh   # the produce to every partition through the Kafka listeners (franz-go)
#   SETTLE=100 bench/partitions.sh   # the default flags: partitions sleep 1 min after their
#     last use (30 s after a wake), so the idle window samples them asleep
#   SERVE_ARGS="--partition-hibernate-after 0" bench/partitions.sh  # every group awake
#   N=10000 SETTLE=45 SERVE_ARGS="--partition-hibernate-after 5s --partition-max-awake 1500" \
#     bench/partitions.sh   # 10,000 partitions on a 2-core machine (docs/performance.md)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-1000}
IDLE=${IDLE:-10}
SETTLE=${SETTLE:-10}
BASE=${PORT:-17400}
WORK=$(mktemp -d)
if [ -z "${BIN:-}" ]; then
  BIN=$WORK/logd
  (cd "$ROOT" && go build -o "$BIN" ./cmd/logd)
fi
PARTKEYS=$WORK/partkeys
(cd "$ROOT" && go build -o "$PARTKEYS" ./bench/partkeys)
KGO=$WORK/kgo
if [ -n "${KAFKA:-}" ]; then (cd "$ROOT" && go build -o "$KGO" ./bench/kgo); fi
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM # exit runs cleanup; a trap that only cleaned up let the script go on

waitport() { for _ in $(seq 1 400); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
fds() { # sockets files; find reads the links itself: a readlink per descriptor took minutes at 10,000
  local all s
  all=$(find "/proc/$1/fd" -mindepth 1 2>/dev/null | wc -l)
  s=$(find "/proc/$1/fd" -mindepth 1 -lname 'socket:*' 2>/dev/null | wc -l)
  echo "$s $((all - s))"
}
now() { date +%s.%N; }

. "$ROOT/bench/start-cluster.sh"
start_cluster
t0=$(now)
# The create answers when the topic is placed; with many partitions its wait
# for the leaders can time out first: then the loop below waits for them.
"$BIN" topic create idle --partitions "$N" --replicas 3 --server "$servers" --timeout 300s >/dev/null ||
  echo "topic create did not confirm; waiting for the leaders" >&2
leaders() { "$BIN" cluster status --json --server "$servers" 2>/dev/null |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(1 for p in d["partitions"] if p["topic"] == "idle" and p.get("leader")))' 2>/dev/null || echo 0; }
deadline=$(( $(date +%s) + ${WAIT:-600} ))
got=$(leaders)
while [ "$got" != "$N" ] && [ "$(date +%s)" -lt $deadline ]; do
  sleep 1; got=$(leaders)
done
if [ "$got" != "$N" ]; then
  echo "$got of $N partitions have a leader after ${WAIT:-600}s; the nodes' logs end with:" >&2
  tail -n 5 "$WORK"/n*.log >&2
  exit 1
fi
elected=$(python3 -c "print('%.1f' % ($(now) - $t0))")

# One record to every partition ("produce to all"): a key per
# partition, found by bench/partkeys with routing.ForKey (Kafka's murmur2), in one
# `logd produce`, which sends to the partitions concurrently and exits
# non-zero unless every record is acknowledged.
# With KAFKA=1, franz-go sends them through the nodes' Kafka listeners
# instead (bench/kgo spread: a manual partitioner, acks all, the client's
# defaults otherwise: its produce requests name every partition a node
# leads at once).
"$PARTKEYS" -n "$N" > "$WORK/keys"
t3=$(now)
if [ -n "${KAFKA:-}" ]; then
  "$KGO" spread -b "$kafka_servers" -topic idle -records "$N" -size 1 -timeout 300s >/dev/null
else
  "$BIN" produce idle --key-delimiter : --acks all --timeout 300s --server "$servers" < "$WORK/keys" >/dev/null
fi
produced=$(python3 -c "print('%.1f' % ($(now) - $t3))")
sleep "$SETTLE"

# Sleeps and wakes of each node's replicas over the window: an idle group
# that wakes (a follower left behind campaigning) costs an election.
wakes() { curl -s "http://127.0.0.1:${http[$1]}/metrics" | awk '/^logd_raft_(sleeps|wakes)_total/ {n[$1] += $2} END {printf "%d %d", n["logd_raft_sleeps_total"], n["logd_raft_wakes_total"]}'; }
declare -a c0 sw0
for i in 0 1 2; do sw0[$i]=$(wakes $i); done
for i in 0 1 2; do c0[$i]=$(ticks "${pids[$i]}"); done
w0=$(now)
if [ -n "${PROFILE:-}" ]; then
  curl -s -o "$PROFILE" "http://127.0.0.1:${http[0]}/debug/pprof/profile?seconds=$IDLE"
else
  sleep "$IDLE"
fi
# CPU is divided by the window's real length: on a loaded machine a sleep
# overruns.
window=$(python3 -c "print($(now) - $w0)")
hz=$(getconf CLK_TCK)
echo
echo "$N partitions x 3 replicas, idle $(printf %.1f "$window")s after ${SETTLE}s settle; all leaders after ${elected}s; one record to each partition acknowledged in ${produced}s; load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
echo
echo "| node | idle CPU (% of a core) | RSS MiB | descriptors | sockets | files | sleeps / wakes in the window |"
echo "|---|---|---|---|---|---|---|"
# Every node's CPU is read before any descriptor count: reading 10,000
# links takes long enough to skew a window that ends later.
declare -a c1 sw1
for i in 0 1 2; do c1[$i]=$(( $(ticks "${pids[$i]}") - c0[i] )); done
for i in 0 1 2; do sw1[$i]=$(wakes $i); done
for i in 0 1 2; do
  c=${c1[$i]}
  read -r s f < <(fds "${pids[$i]}")
  read -r sl0 wk0 <<< "${sw0[$i]}"
  read -r sl1 wk1 <<< "${sw1[$i]}"
  python3 -c "print('| n%d | %.1f | %s | %d | %d | %d | %d / %d |' % ($i + 1, 100.0 * $c / $hz / $window, '$(rss "${pids[$i]}")', $s + $f, $s, $f, $sl1 - $sl0, $wk1 - $wk0))"
done

if [ -n "${HEAP:-}" ]; then
  curl -s -o "$HEAP" "http://127.0.0.1:${http[0]}/debug/pprof/heap"
fi

# Failover of partition 0: kill its leader's node, time a produce through the others.
leader=$("$BIN" cluster status --json --server "$servers" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print([p for p in d["partitions"] if p["topic"] == "idle" and p["partition"] == 0][0]["leader"])')
k=$(( ${leader#n} - 1 ))
others=()
for i in 0 1 2; do [ $i != $k ] && others+=("${api[$i]}"); done
t1=$(now)
kill -9 "${pids[$k]}"
echo x | "$BIN" produce idle --partition 0 --acks all --timeout 120s --server "$(IFS=,; echo "${others[*]}")" >/dev/null
echo
python3 -c "print('failover of partition 0 (leader $leader killed): %.2f s until a produce (acks=all) was acknowledged' % ($(now) - $t1))"

# Graceful stop of the two survivors (SIGTERM), as an operator's restart does.
t2=$(now)
for i in 0 1 2; do [ $i != $k ] && kill -TERM "${pids[$i]}"; done
running() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; } # an exited child stays a zombie until waited
stopped=yes
for i in 0 1 2; do
  [ $i = $k ] && continue
  for _ in $(seq 1 1200); do running "${pids[$i]}" || break; sleep 0.1; done
  running "${pids[$i]}" && stopped=no
done
if [ $stopped = yes ]; then
  python3 -c "print('stop (SIGTERM) of the two other nodes: %.2f s until both exited' % ($(now) - $t2))"
else
  echo "stop (SIGTERM) of the two other nodes: not exited after 120 s (killed by the cleanup)"
fi
