#!/usr/bin/env bash
# share.sh: `make bench-share`. Starts a logd on a temporary directory
# (127.0.0.1 only, Kafka listener on KAFKA_PORT) and runs bench/kgoshare:
# RECORDS records of SIZE bytes on one partition, read by a classic
# consumer group of one member, then read and accepted by share groups of
# MEMBERS members each, in one run; records/s and the ratios to the
# classic group.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORT=${PORT:-17190}
KAFKA_PORT=${KAFKA_PORT:-17191}
RECORDS=${RECORDS:-50000}
SIZE=${SIZE:-1024}
MEMBERS=${MEMBERS:-1,4,16}
WORK=$(mktemp -d)
source "$ROOT/bench/lib.sh"
(cd "$ROOT" && go build -o "$WORK/logd" ./cmd/logd && go build -o "$WORK/kgoshare" ./bench/kgoshare)
"$WORK/logd" serve --data-dir "$WORK/data" --addr 127.0.0.1:$PORT --http-addr "" \
  --kafka-addr 127.0.0.1:$KAFKA_PORT --log-level warn &
PIDS+=($!)
waitport "$KAFKA_PORT"
"$WORK/kgoshare" -b 127.0.0.1:$KAFKA_PORT -records "$RECORDS" -size "$SIZE" -members "$MEMBERS"
