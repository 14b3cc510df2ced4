#!/usr/bin/env bash
# compare-jetstream.sh: the same workloads against logd and NATS JetStream, on
# this machine, in one run, and one table of ratios (logd / JetStream).
#
#   make bench-compare                     # the standard set (about 10 minutes)
#   SCALE=0.1 bench/compare-jetstream.sh   # a tenth of the records, for a quick look
#
# Workloads: 1,000,000 x 100 B and 200,000 x 1 KiB records, 1 and 4 producers,
# then a catch-up consume of the same data. Durability levels:
#   fsync: logd --fsync always  vs JetStream sync_interval: always
#   default: logd's default (also fsync always: durable by default)
#            vs JetStream's default (flush per write, fsync every 2 minutes)
# Systems alternate row by row (the machine's speed drifts over minutes).
# "via Kafka (kgo)" rows: the same node through its Kafka listener, with
# franz-go (bench/kgo: one idempotent producer, acks all, no compression,
# linger 0; one consumer without a group), at the default level; a second
# table sets them against `logd bench` on the same workload, same run.
# Both servers run on 127.0.0.1 in temporary directories and are stopped by
# PID on exit. nats-server v2.15.2 and the nats CLI v0.5.0 are installed with
# `go install` into $CACHE (default ~/.cache/logd-bench) on first use.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/logd-bench}
SCALE=${SCALE:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}       # seconds, per benchmark command
LOGD_PORT=${LOGD_PORT:-17070}
NATS_PORT=${NATS_PORT:-14222}
NATS_SYNC_PORT=${NATS_SYNC_PORT:-14223}
KAFKA_PORT=${KAFKA_PORT:-19092}

mkdir -p "$CACHE"
export GOBIN=$CACHE
[ -x "$CACHE/nats-server" ] || { echo "installing nats-server v2.15.2 into $CACHE" >&2; go install github.com/nats-io/nats-server/v2@v2.15.2; }
[ -x "$CACHE/nats" ] || { echo "installing nats CLI v0.5.0 into $CACHE" >&2; go install github.com/nats-io/natscli/nats@v0.5.0; }
unset GOBIN
(cd "$ROOT" && go build -o "$CACHE/logd" ./cmd/logd && go build -o "$CACHE/kgo-bench" ./bench/kgo)
# The nats CLI reads every NATS_* variable; keep it from picking up strays.
for v in $(env | grep -o '^NATS_[A-Z_]*' || true); do unset "$v"; done

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM # exit runs cleanup; a trap that only cleaned up let the script go on

wait_port() { # host:port
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server on $1 did not start" >&2; return 1
}

"$CACHE/logd" serve --data-dir "$WORK/logd" --addr 127.0.0.1:$LOGD_PORT --http-addr "" --kafka-addr 127.0.0.1:$KAFKA_PORT --log-level warn &
PIDS+=($!)
"$CACHE/nats-server" -a 127.0.0.1 -p $NATS_PORT -js -sd "$WORK/nats-default" >"$WORK/nats-default.log" 2>&1 &
PIDS+=($!)
cat >"$WORK/nats-sync.conf" <<CONF
listen: 127.0.0.1:$NATS_SYNC_PORT
jetstream { store_dir: "$WORK/nats-sync", sync_interval: always }
CONF
"$CACHE/nats-server" -c "$WORK/nats-sync.conf" >"$WORK/nats-sync.log" 2>&1 &
PIDS+=($!)
wait_port 127.0.0.1:$LOGD_PORT; wait_port 127.0.0.1:$KAFKA_PORT; wait_port 127.0.0.1:$NATS_PORT; wait_port 127.0.0.1:$NATS_SYNC_PORT

scaled() { python3 -c "print(max(1000, int($1 * $SCALE)))"; }

# logd_rate produce|consume TOPIC N SIZE PRODUCERS -> records/s
logd_rate() {
  local out
  out=$(timeout "$RUN_TIMEOUT" "$CACHE/logd" bench "$1" --server 127.0.0.1:$LOGD_PORT --topic "$2" \
        --records "$3" --record-size "$4" --producers "$5" --json 2>/dev/null) || { echo "logd bench $1 failed" >&2; echo 0; return; }
  echo "$out" | tail -1 | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["records_per_sec"]))'
}

# nats_rate PORT pub|ordered STREAM N SIZE CLIENTS -> msgs/s
nats_rate() {
  local port=$1 kind=$2 stream=$3 n=$4 size=$5 clients=$6 out
  local base=(--no-context -s "nats://127.0.0.1:$port")
  if [ "$kind" = pub ]; then
    out=$(timeout "$RUN_TIMEOUT" "$CACHE/nats" "${base[@]}" bench js pub async "$stream.subj" --stream="$stream" --create --purge \
          --storage=file --maxbytes=8GB --msgs="$n" --size="$size" --clients="$clients" --no-progress 2>&1) || { echo "nats pub failed: $out" >&2; echo 0; return; }
  else
    out=$(timeout "$RUN_TIMEOUT" "$CACHE/nats" "${base[@]}" bench js ordered --stream="$stream" --msgs="$n" --size="$size" --no-progress 2>&1) || { echo "nats ordered failed: $out" >&2; echo 0; return; }
  fi
  # One client prints "... stats: N msgs/sec"; several print per-client
  # lines and "... aggregated stats: N msgs/sec": the last such line counts.
  echo "$out" | grep -E 'stats: [0-9,]+ msgs/sec' | tail -1 | sed -E 's/.*stats: ([0-9,]+) msgs\/sec.*/\1/' | tr -d , | grep . || { echo "cannot read nats output: $out" >&2; echo 0; }
}

# kgo_rate produce|consume TOPIC N SIZE -> records/s through the Kafka listener
kgo_rate() {
  local out
  if [ "$1" = produce ]; then
    "$CACHE/logd" topic create "$2" --server 127.0.0.1:$LOGD_PORT >/dev/null 2>&1 || true
  fi
  out=$(timeout "$RUN_TIMEOUT" "$CACHE/kgo-bench" "$1" -b 127.0.0.1:$KAFKA_PORT -topic "$2" -records "$3" -size "$4" 2>&1) || { echo "kgo $1 failed: $out" >&2; echo 0; return; }
  echo "$out" | tail -1 | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["records_per_sec"]))'
}

ratio() { python3 -c "a,b=$1,$2; print(f'{a/b:.2f}x' if b else 'n/a')"; }

rows=()
krows=()
krow() { # workload logd-bench kgo
  krows+=("$(printf '%-34s %12s %12s %8s' "$1" "$2" "$3" "$(ratio "$3" "$2")")")
  echo "${krows[-1]}" >&2
}
row() { # workload level logd js
  rows+=("$(printf '%-50s %-8s %12s %12s %8s' "$1" "$2" "$3" "$4" "$(ratio "$3" "$4")")")
  echo "${rows[-1]}" >&2
}

N100=$(scaled 1000000); N1K=$(scaled 200000)
i=0
for spec in "$N100 100" "$N1K 1024"; do
  set -- $spec; n=$1; size=$2
  for producers in 1 4; do
    i=$((i+1))
    name="produce ${n}x${size}B, $producers producer(s)"
    # fsync level, then default level; systems alternate.
    l=$(logd_rate produce "p$i-f" "$n" "$size" "$producers")
    j=$(nats_rate $NATS_SYNC_PORT pub "S$i" "$n" "$size" "$producers")
    row "$name" fsync "$l" "$j"
    j=$(nats_rate $NATS_PORT pub "S$i" "$n" "$size" "$producers")
    l=$(logd_rate produce "p$i-d" "$n" "$size" "$producers")
    row "$name" default "$l" "$j"
    if [ "$producers" = 1 ]; then
      k=$(kgo_rate produce "k$i" "$n" "$size")
      row "${name} via Kafka (kgo)" default "$k" "$j"
      krow "$name" "$l" "$k"
    fi
  done
  # Catch-up consume of what the single-producer default run wrote.
  name="consume ${n}x${size}B (catch-up)"
  first=$((i-1))
  l=$(logd_rate consume "p$first-d" "$n" "$size" 1)
  j=$(nats_rate $NATS_PORT ordered "S$first" "$n" "$size" 1)
  row "$name" default "$l" "$j"
  k=$(kgo_rate consume "k$first" "$n" "$size")
  row "${name} via Kafka (kgo)" default "$k" "$j"
  krow "$name" "$l" "$k"
done

echo
echo "logd vs NATS JetStream v2.15.2 on $(nproc) cores, $(uname -sr), loopback, client and server on one machine"
printf '%-50s %-8s %12s %12s %8s\n' workload level "logd rec/s" "JS msgs/s" ratio
for r in "${rows[@]}"; do echo "$r"; done
echo
echo "logd via Kafka protocol (franz-go kgo) vs logd bench (logd's Go client), same node, same run; load: $(uptime | sed 's/.*load average/load average/')"
printf '%-34s %12s %12s %8s\n' workload "logd bench" "via Kafka" ratio
for r in "${krows[@]}"; do echo "$r"; done
