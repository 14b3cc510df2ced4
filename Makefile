# logd — see README.md. Every target works on a fresh clone: tools the
# targets need are installed into ./.tools by `make tools`.

SHELL     := /bin/bash
GO        ?= go
TOOLS     := $(CURDIR)/.tools
export PATH := $(TOOLS):$(PATH)
export GOBIN := $(TOOLS)

# Packages where concurrency lives run under the race detector; the rest
# (the CLI, tests of the real binary as processes, the torture harness) run
# without it. Together they are every package: check-pkgs says so.
RACE_PKGS  := ./log/... ./partition/... ./routing/... ./offsets/... ./kv/... ./share/... ./txn/... ./retention/... ./client/... ./internal/... ./replication/... ./groups/... ./auth/... ./broker/... ./cluster/... ./kafka/...
PLAIN_PKGS := ./cmd/... ./test/... ./torture/... ./proto/... ./logdtest/... ./bench/...
FUZZTIME  ?= 5s

.PHONY: check-pkgs check-disk verify-deploy all build run test test-race test-txn-kill test-fuzz fuzz lint proto tools bench bench-compaction bench-kv bench-replication bench-compare bench-cluster bench-partitions bench-before-after bench-txn bench-share clean test-kgo

all: build

build:
	$(GO) build -o bin/logd ./cmd/logd

run: build
	./bin/logd serve --data-dir ./data

tools: debs $(TOOLS)/grpcurl $(TOOLS)/kafkajs/node_modules/kafkajs

# Debian packages the tests need, as command:package; `make tools` installs
# the missing ones with apt-get when run as root (CI), and otherwise says
# which to install.
DEB_TOOLS := systemd-analyze:systemd kcat:kcat chromium:chromium curl:curl
# Debian's python3 modules the Kafka client tests import, as module:package
# (they install into Debian's /usr/bin/python3, which the tests run).
DEB_PY := confluent_kafka:python3-confluent-kafka

.PHONY: debs
debs:
	@for t in $(DEB_TOOLS); do cmd=$${t%%:*}; pkg=$${t#*:}; \
	  command -v $$cmd >/dev/null && continue; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "apt-get install $$pkg"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$pkg >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$pkg >/dev/null; } || exit 1; \
	  else echo "$$cmd is missing: install the Debian package $$pkg (some tests skip without it)"; fi; \
	done
	@for t in $(DEB_PY); do mod=$${t%%:*}; pkg=$${t#*:}; \
	  /usr/bin/python3 -c "import $$mod" 2>/dev/null && continue; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "apt-get install $$pkg"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$pkg >/dev/null 2>&1 || \
	      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$pkg >/dev/null; } || exit 1; \
	  else echo "python module $$mod is missing: install the Debian package $$pkg (the Kafka client tests need it)"; fi; \
	done

$(TOOLS)/grpcurl:
	$(GO) install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4

# kafkajs for the Kafka listener's client tests (kafka/clients_test.go).
$(TOOLS)/kafkajs/node_modules/kafkajs:
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js (the kafkajs test needs it)"; exit 1; }
	npm install --prefix $(TOOLS)/kafkajs kafkajs@2.2.4

$(TOOLS)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

$(TOOLS)/protoc-gen-go:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12

$(TOOLS)/protoc-gen-go-grpc:
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

# test: lint (gofmt, go mod tidy, vet, staticcheck, no *raft.Raft outside
# replication), every package once, the concurrent ones under -race, and a
# few seconds of each fuzz target.
test: tools build lint
	@$(MAKE) --no-print-directory check-pkgs check-disk
	$(GO) test -count=1 -race -timeout 10m $(RACE_PKGS)
	$(GO) test -count=1 -timeout 10m $(PLAIN_PKGS)
	$(MAKE) --no-print-directory test-fuzz

# test-txn-kill: franz-go's GroupTransactSession moves 100,000 records on a
# 3-process cluster through a kill -9 and restart (make test moves 10,000).
test-txn-kill: build
	LOGD_TXN_KILL_RECORDS=100000 $(GO) test -count=1 -timeout 20m -run '^TestBinTransactSessionKill9$$' -v ./cmd/logd/

# test-kgo: franz-go's pkg/kgo integration suite (go.mod's version, its tests
# unmodified) against one node (RF 1) and a 3-node cluster (RF 3), KIP-848
# cases, the share-group tests and TestTxnEtl included (test/kgo.sh:
# KGO_TEST_RECORDS, default 50000; `test/kgo.sh one` or `three` for one run).
test-kgo: build
	test/kgo.sh

# check-disk fails when the tests' temporary directory has less than 2 GiB free: the
# servers they start refuse writes below 512 MiB free (DESIGN.md, full disk), and the
# torture runs write a few hundred MiB each, so a nearly full disk fails dozens of
# tests with "the disk ... is full" (CI once did) instead of saying so once.
check-disk:
	@free=$$(df -Pk "$${TMPDIR:-/tmp}" | awk 'NR==2 {print $$4}'); \
	  if [ "$$free" -lt 2097152 ]; then echo "only $$((free / 1024)) MiB free under $${TMPDIR:-/tmp}: make test needs 2 GiB (free space, or set TMPDIR to a larger disk)"; exit 1; fi

# check-pkgs fails when a package is in neither test list.
check-pkgs:
	@missing=$$(comm -23 <($(GO) list ./... | sort) <($(GO) list $(RACE_PKGS) $(PLAIN_PKGS) | sort)); \
	  if [ -n "$$missing" ]; then echo "packages not tested by make test: $$missing (add them to RACE_PKGS or PLAIN_PKGS)"; exit 1; fi

# Each fuzz target for FUZZTIME (.ci/fuzz-target retries, twice at most, the Go 1.26
# coordinator's bare deadline failure); `make fuzz FUZZTIME=2m` runs longer.
test-fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    GO=$(GO) .ci/fuzz-target $$pkg $$f $(FUZZTIME) || exit 1; \
	  done; \
	done

fuzz:
	$(MAKE) test-fuzz FUZZTIME=2m

# verify-deploy: deploy/logd.service's hardening, and systemd-analyze
# verify of it (the test skips that part, saying so, without systemd).
verify-deploy:
	$(GO) test -count=1 -v -run '^TestDeploySystemdUnit$$' ./cmd/logd/

lint: $(TOOLS)/staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt: run gofmt -w"; exit 1)
	@$(GO) mod tidy -diff >/dev/null || ($(GO) mod tidy -diff; echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1)
	@if grep -n 'Raft()' $$(git ls-files '*.go' | grep -v '^replication/'); then \
	  echo "only package replication touches *raft.Raft: give replication a method (see replication/control.go)"; exit 1; fi
	@$(GO) run ./internal/funclen -max 80 $$(git ls-files '*.go')
	$(GO) vet ./...
	staticcheck ./...

proto: $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc
	@command -v protoc >/dev/null || (echo "protoc missing: apt-get install -y protobuf-compiler libprotobuf-dev"; exit 1)
	protoc -I proto --go_out=paths=source_relative:proto --go-grpc_out=paths=source_relative:proto proto/logd/v1/logd.proto proto/logd/v1/share.proto proto/logd/v1/txn.proto

# bench: the storage engine's Go benchmarks, then logd end to end
# (bench/standard.sh: a temporary node on 127.0.0.1, `logd bench` runs),
# then what replication costs (bench-replication). The key-value view
# against NATS JetStream KV and the cleaner's cost to produce latency are
# make bench-kv; the cleaner's speed, make bench-compaction.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./log/
	bench/standard.sh
	bench/replication.sh

# bench-compaction: the cleaner's Go benchmarks (log/compact_bench_test.go;
# make bench runs them too, on 256 MiB) on a partition of COMPACT_MB MiB
# (default 1024) of 1 KiB values over 10,000 keys: compaction MB/s and the
# bytes it reclaims, and durable append p50/p99 with and without a
# compaction of another partition running at the cleaner's default I/O bound.
COMPACT_MB ?= 1024
bench-compaction:
	LOGD_BENCH_COMPACT_MB=$(COMPACT_MB) $(GO) test -run '^$$' -bench 'Compact' -benchtime 1x ./log/

# bench-kv: logd's key-value view beside NATS JetStream KV in one run (put
# rate, get p50/p99 consistent and local, ratios; installs nats-server as
# bench-compare does), then durable append p50/p99 with and without a
# compaction running on a COMPACT_MB MiB partition, medians of ROUNDS
# (bench/kv.sh; SCALE=0.1 COMPACT_MB=128 for a quick look).
bench-kv:
	COMPACT_MB=$(COMPACT_MB) bench/kv.sh

# bench-replication: durable 1 KiB produce on one node, on 3 nodes (RF 3,
# acks=all) with one partition and with 3, ROUNDS times (default 3)
# alternating: throughput, its ratio to the single node, and server CPU
# s/GB of leaders and followers, the median of each across rounds (ratios
# taken within a round) and each round's ratios (bench/replication.sh;
# RECORDS; PROFILE=dir also saves the first round's single node's, leader's
# and a follower's CPU and allocation profiles).
bench-replication:
	bench/replication.sh

# bench-txn: transactional produce (100- and 10,000-record transactions)
# against idempotent produce, and read_committed consume against
# read_uncommitted, at 1 KiB through the Kafka listener (bench/txn.sh).
bench-txn:
	bench/txn.sh

# bench-share: share-group consumption of one partition with 1, 4 and 16
# members against a classic consumer group, 1 KiB records through the
# Kafka listener, in one run; then the wait of a released record for its
# next delivery with a redelivery backoff (base 100 ms, max 1600 ms) and
# without, by delivery, against the backoff's window (bench/share.sh;
# MODE=throughput or redelivery runs one; RECORDS, MEMBERS,
# REDELIVERY_RECORDS, REDELIVERY_MEMBERS, RELEASES, BACKOFF_BASE_MS,
# BACKOFF_MAX_MS).
bench-share:
	bench/share.sh

# bench-cluster: one node vs a 3-node cluster (acks=all) in one run: the
# throughput ratio and the disk bytes written per produced byte per replica.
bench-cluster:
	bench/cluster.sh

# bench-before-after: two revisions' produce throughput (one node and 3
# nodes, 100 B and 1 KiB, 1 and 4 producers) and the cluster's CPU per MB,
# alternating in one window: make bench-before-after OLD=main~1 [NEW=HEAD].
bench-before-after:
	OLD=$(OLD) NEW=$(or $(NEW),HEAD) bench/before-after.sh

# bench-partitions: the idle cost of many partitions: 3 nodes, one
# topic of N (default 1000) partitions x 3 replicas, one record produced to each,
# CPU, RSS and descriptors per node over 10s idle, then the failover time of one
# partition. SERVE_ARGS="..." adds flags to every `logd serve` it starts;
# KAFKA=1 produces through the nodes' Kafka listeners with franz-go instead.
bench-partitions:
	bench/partitions.sh

# bench-compare: logd vs NATS JetStream, one table of ratios (installs
# nats-server and the nats CLI at pinned versions into ~/.cache/logd-bench).
bench-compare:
	bench/compare-jetstream.sh

clean:
	rm -rf bin

# torture: the fault-injection harness (torture/) against real logd
# processes for DURATION (default 10m): by default three nodes in cluster
# mode (TestTortureCluster: kill, pause, pause-kill, partitions, client
# cuts, a full disk as root); TORTURE_TEST=SingleNode runs one node. `make
# torture DURATION=30m SEED=7 NEMESES=kill,pause,partition-isolate` picks
# the faults (kinds: kill,pause,pause-kill,net-cut,net-blackhole,net-slow,
# disk-full,partition-isolate,partition-halves,partition-bridge; disk-full
# mounts a tmpfs: root only; empty: the test's default). The report (text,
# JSON, history, any linearizability visualization, node logs) goes to
# TORTURE_REPORT_DIR (default $TMPDIR/logd-torture-report, /tmp when
# TMPDIR is unset). TORTURE_GROUP_MEMBERS (default 3; 0: none) members of
# one consumer group share the topic's partitions, TORTURE_KAFKA_GROUP
# (default 2; 0: none) franz-go members each of a classic and a KIP-848
# group over the Kafka protocol. PARTITIONS (default 3)
# is the workload topic's partition count: `make torture PARTITIONS=200`
# is the many-partitions run. SERVE_ARGS (TORTURE_SERVE_ARGS,
# split on spaces) adds flags to every `logd serve` the run starts:
# SERVE_ARGS="--log-level debug". QUIET=FOR/EVERY (TORTURE_QUIET, e.g.
# QUIET=12s/30s) makes every workload client start nothing new in the last
# FOR of every EVERY of the run while the faults go on, so that partitions
# sit idle under faults (0 < FOR < EVERY). Both are off when empty. The
# report counts replica sleeps / wakes (logd_raft_sleeps_total and
# logd_raft_wakes_total on every node's /metrics), and a run with
# SERVE_ARGS="--partition-hibernate-after D" (D > 0) in which no replica
# slept is INVALID. A compacted topic's workload and checker run beside the
# others (torture/doc.go, "Compacted topics"); TORTURE_COMPACTED=0 in the
# environment leaves them out. So do the key-value view's clients
# (TORTURE_KV=0 leaves them out), whose gets, puts, compare-and-sets and
# deletes porcupine checks against a register per key (torture/doc.go,
# "The key-value view"), the transactional producers and their
# read_committed reader (TORTURE_TXN=0 leaves them out) and the share
# group's members (TORTURE_SHARE=0 leaves them out; TORTURE_SHARE=ordered
# turns per-key ordering on).
.PHONY: torture
DURATION ?= 10m
SEED ?= 1
NEMESES ?=
TORTURE_TEST ?= Cluster
TORTURE_REPORT_DIR ?= $(or $(TMPDIR),/tmp)/logd-torture-report
PARTITIONS ?=
SERVE_ARGS ?=
QUIET ?=
torture:
	rm -rf $(TORTURE_REPORT_DIR)
	TORTURE_DURATION=$(DURATION) TORTURE_SEED=$(SEED) TORTURE_NEMESES=$(NEMESES) TORTURE_REPORT_DIR=$(TORTURE_REPORT_DIR) \
	  TORTURE_PARTITIONS=$(PARTITIONS) TORTURE_SERVE_ARGS="$(SERVE_ARGS)" TORTURE_QUIET=$(QUIET) \
	  $(GO) test -count=1 -v -timeout 0 -run '^TestTorture$(TORTURE_TEST)$$' ./torture/

# torture-soak: the 3-process cluster torture once per seed, DURATION each,
# one line per seed (torture/soak.sh): `make torture-soak SEEDS="1 2 3"
# DURATION=10m PARALLEL=2` (NEMESES, PARTITIONS, SERVE_ARGS and QUIET as
# for torture). Before calling a change to the replicated path safe, soak
# at least ten seeds for ten minutes.
.PHONY: torture-soak
SEEDS ?= 1 2 3 4 5 6 7 8 9 10
PARALLEL ?= 1
torture-soak:
	SEEDS="$(SEEDS)" DURATION=$(DURATION) PARALLEL=$(PARALLEL) NEMESES=$(NEMESES) PARTITIONS=$(PARTITIONS) \
	  SERVE_ARGS="$(SERVE_ARGS)" QUIET=$(QUIET) torture/soak.sh
