#!/usr/bin/env bash
# txn.sh: `make bench-txn`. Starts a logd on a temporary directory
# (127.0.0.1 only, Kafka listener on KAFKA_PORT) and runs bench/kgotxn:
# transactional produce at SIZE bytes in 100- and 10,000-record
# transactions against idempotent produce, and read_committed consume
# against read_uncommitted, RECORDS records each, in one run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORT=${PORT:-17180}
KAFKA_PORT=${KAFKA_PORT:-17181}
RECORDS=${RECORDS:-100000}
SIZE=${SIZE:-1024}
WORK=$(mktemp -d)
source "$ROOT/bench/lib.sh"
(cd "$ROOT" && go build -o "$WORK/logd" ./cmd/logd && go build -o "$WORK/kgotxn" ./bench/kgotxn)
"$WORK/logd" serve --data-dir "$WORK/data" --addr 127.0.0.1:$PORT --http-addr "" \
  --kafka-addr 127.0.0.1:$KAFKA_PORT --log-level warn &
PIDS+=($!)
waitport "$KAFKA_PORT"
"$WORK/kgotxn" -b 127.0.0.1:$KAFKA_PORT -records "$RECORDS" -size "$SIZE"
