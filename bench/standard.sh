#!/usr/bin/env bash
# standard.sh: `make bench`'s end-to-end set. Starts a logd on a temporary
# directory (127.0.0.1 only), runs `logd bench` produce and consume at 100 B
# and 1 KiB, and a latency run at a fixed offered rate, then stops it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORT=${PORT:-17170}
SCALE=${SCALE:-1}
BIN=$(mktemp -d)/logd
(cd "$ROOT" && go build -o "$BIN" ./cmd/logd)
DATA=$(mktemp -d)
"$BIN" serve --data-dir "$DATA" --addr 127.0.0.1:$PORT --http-addr "" --log-level warn &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$(dirname "$BIN")"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
n() { python3 -c "print(max(1000, int($1 * $SCALE)))"; }
b() { timeout 900 "$BIN" bench "$@" --server 127.0.0.1:$PORT; }
b produce --topic s100 --records "$(n 1000000)" --record-size 100
b produce --topic s100x4 --records "$(n 1000000)" --record-size 100 --producers 4
b consume --topic s100 --records "$(n 1000000)" --record-size 100
b produce --topic s1k --records "$(n 200000)" --record-size 1024
b consume --topic s1k --records "$(n 200000)" --record-size 1024
b produce --topic lat --records "$(n 100000)" --record-size 100 --rate 10000
b e2e --topic e2e --records "$(n 50000)" --record-size 100 --rate 10000
