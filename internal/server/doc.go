// Package server is a logd node: the gRPC services of proto/logd/v1 over
// the node's topics (package partition), consumer offsets (package
// offsets) and retention (package retention), plus the HTTP endpoints
// /metrics, /healthz, /readyz and /debug/pprof/.
//
// Errors from the packages below are mapped to gRPC statuses in one place,
// errors.go. Handlers validate every request before touching storage.
//
// # Files
//
//	server.go        Start and Close: the data directory, the listeners, the HTTP endpoints, the trimmer
//	config.go        Config and its defaults
//	produce.go       Produce and ProduceStream: validate, route, dedup, append or replicate, answer
//	fetch.go         Fetch, Subscribe, ListOffsets: leader check, read budget, long-poll on the log
//	offsets.go       CommitOffsets, FetchOffsets, ListGroups, ResetOffsets, lag
//	admin.go         topic create, list, describe, alter, delete
//	errors.go        the error -> status mapping
//	conns.go         the connection cap; diskspace.go: the free-space guard
//	metrics.go       the Prometheus collectors
//	clustermode.go   cluster mode: start, reconcile replicas, spread leaders, follower lag
//	cluster.go       Cluster.Status, join and remove-node
//	clusteradmin.go  the metadata writes a cluster runs on its metadata leader
//	forward.go       forwarding to leaders, "not leader" answers, linearizable reads
//
// In a cluster a node serves a partition only while it leads the
// partition's Raft group: writes once replication.Partition.Leading proves
// the term, reads once ConfirmRead proves the leadership after the read
// arrived. Everything it needs of Raft is a method of package replication;
// it holds no *raft.Raft.
//
// This package is both the gRPC front-end and, today, the core and the
// cluster control plane; docs/architecture.md describes the split planned
// (broker/, cluster/) so that the Kafka and HTTP front-ends share one core.
package server
