#!/usr/bin/env bash
# kgo.sh: `make test-kgo`. franz-go's own integration suite (the package
# github.com/twmb/franz-go/pkg/kgo at the version go.mod requires, its
# tests run unmodified from the module cache) against logd's Kafka
# listener on 127.0.0.1:
#
#   one  one node, KGO_TEST_RF=1, with a SCRAM user so that TestSCRAMAuth
#        and TestSCRAMAuthBadCredentials run (--auth optional)
#   three three nodes in cluster mode, KGO_TEST_RF=3
#
# `test/kgo.sh` runs both, one after the other; `test/kgo.sh one` or
# `test/kgo.sh three` runs one of them. The suite runs every KIP-848 case
# (the group tests' "/848" subtests, Test848RegexBrokerResolves) because
# logd advertises ConsumerGroupHeartbeat v1, which is the suite's switch
# for them; it runs the static-membership cases because JoinGroup v5+ is
# advertised.
#
# Environment:
#   KGO_TEST_RECORDS  records TestGroupETL produces and moves through its
#                     chains (franz-go's default is 500,000; here 50,000 by
#                     default, which a 2-core machine moves in minutes)
#   KGO_RUN           a -run pattern (default: every test)
#   KGO_SKIP          a -skip pattern (default: the tests SKIP names below)
#   KGO_TIMEOUT       go test's -timeout per run (default 40m)
#   KGO_REPORT_DIR    where the suite's output, the summary and the nodes'
#                     logs are kept (default $TMPDIR/logd-kgo-report)
#   KGO_SERVE_ARGS    flags added to every `logd serve` (default
#                     --max-batch-bytes 16777216, below)
#   BIN               the logd binary (default bin/logd, built by make)
#   KGO_LOG_LEVEL     franz-go's client log level in the tests (info)
#
# It prints, per run, one line per test (PASS, FAIL, SKIP with the time; a
# subtest when it failed or was skipped), the counts of tests and subtests
# and the run's seconds, and exits non-zero when a run had a failing test.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/bin/logd}
RUNS=${*:-one three}
export KGO_TEST_RECORDS=${KGO_TEST_RECORDS:-50000}
KGO_RUN=${KGO_RUN:-.}
KGO_TIMEOUT=${KGO_TIMEOUT:-40m}
KGO_REPORT_DIR=${KGO_REPORT_DIR:-${TMPDIR:-/tmp}/logd-kgo-report}
BASE=${BASE:-17400}
GO=${GO:-go}
# A Kafka broker's message.max.bytes (1 MiB) is only the default of a
# topic's max.message.bytes, which may raise it; logd's --max-batch-bytes
# bounds every topic. TestIssueFetchLargerThanBrokerMaxReadBytes produces
# a 5 MiB batch to a topic whose max.message.bytes is 10 MiB, so the nodes
# accept batches up to 16 MiB, and a topic's own bound (TestClient_
# ProduceLargeMessages' 50 KB) still refuses larger ones.
KGO_SERVE_ARGS=${KGO_SERVE_ARGS:---max-batch-bytes 16777216}
read -r -a serve_args <<< "$KGO_SERVE_ARGS"

# Tests of features logd leaves to their own work, skipped by name (a
# test's subtests go with it); empty: every test runs.
SKIP=()
skip=${KGO_SKIP-}
if [ -z "${KGO_SKIP+set}" ] && [ ${#SKIP[@]} -gt 0 ]; then
  skip=$(IFS='|'; echo "^(${SKIP[*]})\$")
fi

[ -x "$BIN" ] || { echo "$BIN is missing: run make build" >&2; exit 1; }
mkdir -p "$KGO_REPORT_DIR"
WORK=$(mktemp -d)
source "$ROOT/bench/lib.sh"
source "$ROOT/bench/start-cluster.sh"

# The test binary is compiled once, inside logd's module (so with the
# dependency versions go.mod pins), before any node starts.
echo "compiling github.com/twmb/franz-go/pkg/kgo's tests"
(cd "$ROOT" && $GO test -c -o "$WORK/kgo.test" github.com/twmb/franz-go/pkg/kgo)
# It runs in the package's directory, as go test runs it: a test reads
# config.go there.
PKGDIR=$(cd "$ROOT" && $GO list -f '{{.Dir}}' github.com/twmb/franz-go/pkg/kgo)

start_one() {
  local port=$((BASE + 1)) kport=$((BASE + 2))
  "$BIN" serve --data-dir "$WORK/one" --addr 127.0.0.1:$port --http-addr "" \
    --kafka-addr 127.0.0.1:$kport --auth optional --log-level warn ${serve_args[@]+"${serve_args[@]}"} 2>"$WORK/one.log" &
  PIDS+=($!)
  waitport "$kport"
  printf 'kgo-scram-pw\n' | "$BIN" user create kgo --server 127.0.0.1:$port >/dev/null
  seeds=127.0.0.1:$kport
  export KGO_TEST_RF=1 KGO_TEST_SCRAM=kgo:kgo-scram-pw:256 KGO_TEST_SCRAM_SEEDS=$seeds
}

start_three() {
  KAFKA=1 SERVE_ARGS=$KGO_SERVE_ARGS start_cluster
  seeds=$kafka_servers
  export KGO_TEST_RF=3
  unset KGO_TEST_SCRAM KGO_TEST_SCRAM_SEEDS
}

# summary FILE: one line per test (subtests only when they failed or were
# skipped) of go test -v's output, then the counts of tests and subtests.
summary() {
  grep -E '^--- (PASS|FAIL|SKIP):|^ +--- (FAIL|SKIP):' "$1" | sed -E 's/^( *)--- ([A-Z]+): /\1\2 /' || true
  printf 'passed %d, failed %d, skipped %d (tests and subtests)\n' \
    "$(grep -cE '^ *--- PASS:' "$1")" "$(grep -cE '^ *--- FAIL:' "$1")" "$(grep -cE '^ *--- SKIP:' "$1")"
}

failed=0
for run in $RUNS; do
  case $run in
    one) start_one ;;
    three) start_three ;;
    *) echo "unknown run $run (one, three)" >&2; exit 2 ;;
  esac
  out=$KGO_REPORT_DIR/$run.out
  echo "== $run: KGO_SEEDS=$seeds KGO_TEST_RF=$KGO_TEST_RF KGO_TEST_RECORDS=$KGO_TEST_RECORDS"
  start=$(date +%s)
  rc=0
  (cd "$PKGDIR" && KGO_SEEDS=$seeds "$WORK/kgo.test" -test.count=1 -test.v -test.timeout "$KGO_TIMEOUT" \
    -test.run "$KGO_RUN" -test.skip "$skip") >"$out" 2>&1 || rc=$?
  secs=$(($(date +%s) - start))
  summary "$out" | tee "$KGO_REPORT_DIR/$run.summary"
  echo "== $run: exit $rc after ${secs}s (output: $out)"
  if [ "$rc" != 0 ]; then
    failed=1
    grep -E '^(panic:|FAIL|ok)' "$out" | head -5 || true
  fi
  stopall
  for f in "$WORK"/*.log; do cp "$f" "$KGO_REPORT_DIR/$run-$(basename "$f")"; done
  rm -rf "$WORK/one" "$WORK"/n[012] "$WORK"/*.log
done
exit $failed
