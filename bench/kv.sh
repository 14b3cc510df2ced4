#!/usr/bin/env bash
# kv.sh: logd's key-value view beside NATS JetStream KV on this machine, in
# one run, and one table of ratios; then what a running cleaner costs
# durable appends on the same disk.
#
#   make bench-kv                           # the standard set
#   SCALE=0.1 COMPACT_MB=128 bench/kv.sh    # a quick look
#
# KV (bench/kvcompare, its own Go module so that logd does not depend on
# nats.go): KEYS keys (default 1,000) of SIZE bytes (100) written once,
# then PUTS puts (20,000) of random keys from CLIENTS goroutines (4), each
# waiting for its answer; then GETS gets (20,000) of random keys from one
# goroutine, of each kind: logd's linearizable get (leader, read barrier)
# and its stale get; JetStream KV's get through the stream leader's API
# (a bucket without direct get) and its direct get. Against two NATS
# servers: its default (fsync every 2 minutes) and sync_interval: always
# (logd's default is fsync always). Servers run on 127.0.0.1 in temporary
# directories, stopped by PID on exit; nats-server v2.15.2 is installed
# with `go install` into $CACHE (default ~/.cache/logd-bench) on first
# use, as bench/compare-jetstream.sh does.
#
# Cleaner: BenchmarkAppendWhileCompacting (log/compact_bench_test.go) on a
# partition of COMPACT_MB MiB (default 1,024) of 1 KiB values over 10,000
# keys, ROUNDS times (default 3): durable append p50/p99 with and without
# a compaction of another partition running at the cleaner's I/O bound;
# the ratio of the medians of the rounds (target: p99 with the cleaner at
# most 1.5x without, on a quiet machine).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/logd-bench}
SCALE=${SCALE:-1}
KEYS=${KEYS:-1000}
SIZE=${SIZE:-100}
CLIENTS=${CLIENTS:-4}
COMPACT_MB=${COMPACT_MB:-1024}
ROUNDS=${ROUNDS:-3}
LOGD_PORT=${LOGD_PORT:-17170}
NATS_PORT=${NATS_PORT:-14322}
NATS_SYNC_PORT=${NATS_SYNC_PORT:-14323}
scaled() { python3 -c "print(max(500, int($1 * $SCALE)))"; }
PUTS=${PUTS:-$(scaled 20000)}
GETS=${GETS:-$(scaled 20000)}

mkdir -p "$CACHE"
[ -x "$CACHE/nats-server" ] || { echo "installing nats-server v2.15.2 into $CACHE" >&2; GOBIN=$CACHE go install github.com/nats-io/nats-server/v2@v2.15.2; }
(cd "$ROOT" && go build -o "$CACHE/logd" ./cmd/logd)
(cd "$ROOT/bench/kvcompare" && go build -o "$CACHE/kvcompare" .)

WORK=$(mktemp -d)
. "$ROOT/bench/lib.sh"

"$CACHE/logd" serve --data-dir "$WORK/logd" --addr 127.0.0.1:$LOGD_PORT --http-addr "" --kafka-addr "" --log-level warn &
PIDS+=($!)
"$CACHE/nats-server" -a 127.0.0.1 -p $NATS_PORT -js -sd "$WORK/nats-default" >"$WORK/nats-default.log" 2>&1 &
PIDS+=($!)
cat >"$WORK/nats-sync.conf" <<CONF
listen: 127.0.0.1:$NATS_SYNC_PORT
jetstream { store_dir: "$WORK/nats-sync", sync_interval: always }
CONF
"$CACHE/nats-server" -c "$WORK/nats-sync.conf" >"$WORK/nats-sync.log" 2>&1 &
PIDS+=($!)
waitport $LOGD_PORT; waitport $NATS_PORT; waitport $NATS_SYNC_PORT

args=(-keys "$KEYS" -size "$SIZE" -puts "$PUTS" -gets "$GETS" -clients "$CLIENTS")
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "kv: logd" >&2
L=$("$CACHE/kvcompare" logd -addr 127.0.0.1:$LOGD_PORT -name kvbench "${args[@]}")
echo "kv: JetStream (default)" >&2
J=$("$CACHE/kvcompare" nats -url nats://127.0.0.1:$NATS_PORT -name kvbench "${args[@]}")
echo "kv: JetStream (sync_interval: always)" >&2
S=$("$CACHE/kvcompare" nats -url nats://127.0.0.1:$NATS_SYNC_PORT -name kvbench "${args[@]}")
load1=$(cut -d' ' -f1-3 /proc/loadavg)
stopall

echo
echo "logd key-value view vs NATS JetStream KV v2.15.2, $KEYS keys x $SIZE B, $PUTS puts from $CLIENTS clients, $GETS gets of each kind from one;"
echo "$(nproc) cores, $(uname -sr), loopback; load average $load0 before, $load1 after"
python3 - "$L" "$J" "$S" <<'PY'
import json, sys
l, j, s = (json.loads(a) for a in sys.argv[1:4])
def r(a, b): return f"{a / b:.2f}x" if b else "n/a"
print(f"{'measurement':34} {'logd':>10} {'JS default':>11} {'ratio':>7} {'JS fsync':>10} {'ratio':>7}")
for name, lk, jk, unit in [
    ("put rate (/s)", "put_per_sec", "put_per_sec", ""),
    ("get p50 (us), consistent", "get_p50_us", "get_p50_us", ""),
    ("get p99 (us), consistent", "get_p99_us", "get_p99_us", ""),
    ("get p50 (us), local/stale", "local_get_p50_us", "local_get_p50_us", ""),
    ("get p99 (us), local/stale", "local_get_p99_us", "local_get_p99_us", ""),
]:
    print(f"{name:34} {l[lk]:10.0f} {j[jk]:11.0f} {r(l[lk], j[jk]):>7} {s[jk]:10.0f} {r(l[lk], s[jk]):>7}")
PY

echo
echo "durable append latency with and without a compaction running, $COMPACT_MB MiB partition, $ROUNDS rounds" >&2
out=$(cd "$ROOT" && LOGD_BENCH_COMPACT_MB=$COMPACT_MB go test -run '^$' -bench 'AppendWhileCompacting' -benchtime 1x -count "$ROUNDS" ./log/ | tee -a /dev/stderr)
load2=$(cut -d' ' -f1-3 /proc/loadavg)
echo "durable append (fsync always, 1 KiB, 500/s) beside a $COMPACT_MB MiB partition, medians of $ROUNDS rounds; load average $load2 after"
echo "$out" | python3 -c '
import re, sys, statistics
m = {}
for line in sys.stdin:
    g = re.match(r"BenchmarkAppendWhileCompacting/cleaner=(\w+)\S*\s.*?([\d.]+) p50-us\s+([\d.]+) p99-us", line)
    if g:
        m.setdefault(g[1], []).append((float(g[2]), float(g[3])))
if set(m) != {"false", "true"}:
    sys.exit("no AppendWhileCompacting results")
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in m.items()}
print("%-10s %10s %13s %7s" % ("", "without", "with cleaner", "ratio"))
for i, name in enumerate(["p50 (us)", "p99 (us)"]):
    a, b = med["false"][i], med["true"][i]
    print(f"{name:10} {a:10.0f} {b:13.0f} {b / a:6.2f}x")
'
