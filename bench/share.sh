#!/usr/bin/env bash
# share.sh: `make bench-share`. Starts a logd on a temporary directory
# (127.0.0.1 only, Kafka listener on KAFKA_PORT) and runs bench/kgoshare
# twice on it (MODE=throughput or MODE=redelivery runs one of them):
#
# throughput: RECORDS records of SIZE bytes on one partition, read by a
# classic consumer group of one member, then read and accepted by share
# groups of MEMBERS members each, in one run; records/s and the ratios to
# the classic group.
#
# redelivery: REDELIVERY_RECORDS records of SIZE bytes on one partition,
# each released by a share group of REDELIVERY_MEMBERS members after its
# first RELEASES deliveries and accepted at the next, once with
# share.redelivery.backoff.base.ms=BACKOFF_BASE_MS and .max.ms=BACKOFF_MAX_MS
# and once with the backoff off; for each delivery released, the wait from
# the release's request to the record's next delivery against the
# backoff's window (p50, mean, p99, max).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORT=${PORT:-17190}
KAFKA_PORT=${KAFKA_PORT:-17191}
MODE=${MODE:-both}
RECORDS=${RECORDS:-50000}
SIZE=${SIZE:-1024}
MEMBERS=${MEMBERS:-1,4,16}
REDELIVERY_RECORDS=${REDELIVERY_RECORDS:-500}
REDELIVERY_MEMBERS=${REDELIVERY_MEMBERS:-4}
RELEASES=${RELEASES:-6}
BACKOFF_BASE_MS=${BACKOFF_BASE_MS:-100}
BACKOFF_MAX_MS=${BACKOFF_MAX_MS:-1600}
case "$MODE" in both | throughput | redelivery) ;; *) echo "MODE is both, throughput or redelivery, not $MODE" >&2; exit 2 ;; esac
WORK=$(mktemp -d)
source "$ROOT/bench/lib.sh"
(cd "$ROOT" && go build -o "$WORK/logd" ./cmd/logd && go build -o "$WORK/kgoshare" ./bench/kgoshare)
"$WORK/logd" serve --data-dir "$WORK/data" --addr 127.0.0.1:$PORT --http-addr "" \
  --kafka-addr 127.0.0.1:$KAFKA_PORT --log-level warn &
PIDS+=($!)
waitport "$KAFKA_PORT"
if [ "$MODE" != redelivery ]; then
  "$WORK/kgoshare" -b 127.0.0.1:$KAFKA_PORT -records "$RECORDS" -size "$SIZE" -members "$MEMBERS"
fi
if [ "$MODE" = both ]; then echo; fi
if [ "$MODE" != throughput ]; then
  "$WORK/kgoshare" -b 127.0.0.1:$KAFKA_PORT -redelivery -records "$REDELIVERY_RECORDS" -size "$SIZE" \
    -members "$REDELIVERY_MEMBERS" -releases "$RELEASES" -backoff-base-ms "$BACKOFF_BASE_MS" -backoff-max-ms "$BACKOFF_MAX_MS"
fi
