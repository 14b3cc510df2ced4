#!/usr/bin/env bash
# cluster.sh: `make bench-cluster`. In one run, on 127.0.0.1 only: the same
# produce workload against one logd node and against a 3-node cluster
# (acks=all, 3 replicas), then prints the throughput ratio and, for the
# cluster, the disk bytes written per produced byte on each replica: from
# logd's own counter (segments and indexes) and from the kernel
# (/proc/PID/io write_bytes: everything, Pebble and Raft metadata included).
# It stops what it started (by PID).
#
#   RECORDS=200000 SIZE=1024 PARTITIONS=3 PRODUCERS=3 bench/cluster.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RECORDS=${RECORDS:-300000}
SIZE=${SIZE:-1024}
PARTITIONS=${PARTITIONS:-3}
PRODUCERS=${PRODUCERS:-3}
BASE=${PORT:-17300}
WORK=$(mktemp -d)
BIN=$WORK/logd
(cd "$ROOT" && go build -o "$BIN" ./cmd/logd)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM # exit runs cleanup; a trap that only cleaned up let the script go on

waitport() { for _ in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 never opened" >&2; exit 1; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 ~ "^"m {s += $2} END {printf "%.0f", s}'; }
iobytes() { awk '/^write_bytes/ {print $2}' "/proc/$1/io"; }
bench() { timeout 900 "$BIN" bench produce --records "$RECORDS" --record-size "$SIZE" --partitions "$PARTITIONS" \
  --producers "$PRODUCERS" --keys 1000 --json "$@" | tail -1; }
rps() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["records_per_sec"])' "$1"; }

echo "workload: $RECORDS records of $SIZE B, $PARTITIONS partitions, $PRODUCERS producers, fsync always" >&2

# One node.
"$BIN" serve --data-dir "$WORK/single" --addr 127.0.0.1:$BASE --http-addr "" --log-level warn &
PIDS+=($!)
waitport $BASE
one=$(bench --server 127.0.0.1:$BASE --topic single)
kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true

# Three nodes.
. "$ROOT/bench/start-cluster.sh"
start_cluster
"$BIN" topic create cluster --partitions "$PARTITIONS" --replicas 3 --server "$servers" >/dev/null
sleep 2 # leaders elected and spread
declare -a disk0 io0
for i in 0 1 2; do disk0[$i]=$(metric "${http[$i]}" logd_disk_written_bytes_total); io0[$i]=$(iobytes "${pids[$i]}"); done
three=$(bench --server "$servers" --topic cluster --acks all)
produced=0
for i in 0 1 2; do
  v=$(metric "${http[$i]}" 'logd_produce_bytes_total[{]topic="cluster"')
  produced=$((produced + v))
done
echo
echo "| run | records/s | MB/s | p99 ms |"
echo "|---|---|---|---|"
for r in "1 node:$one" "3 nodes, acks=all:$three"; do
  python3 -c 'import json,sys; n,j=sys.argv[1].split(":",1); d=json.loads(j); print("| %s | %.0f | %.1f | %.2f |" % (n, d["records_per_sec"], d["mb_per_sec"], d["latency_ms"]["p99"]))' "$r"
done
python3 -c 'import sys; print("\n3 nodes / 1 node (records/s): %.2f" % (float(sys.argv[2]) / float(sys.argv[1])))' "$(rps "$one")" "$(rps "$three")"
echo
echo "produced batch bytes (leaders): $produced"
echo "| replica | logd segment+index bytes / produced byte | kernel write_bytes / produced byte |"
echo "|---|---|---|"
for i in 0 1 2; do
  d=$(( $(metric "${http[$i]}" logd_disk_written_bytes_total) - disk0[$i] ))
  io=$(( $(iobytes "${pids[$i]}") - io0[$i] ))
  python3 -c 'import sys; d,io,p=map(float,sys.argv[2:]); print("| %s | %.3f | %.3f |" % (sys.argv[1], d/p, io/p))' "n$((i + 1))" "$d" "$io" "$produced"
done
