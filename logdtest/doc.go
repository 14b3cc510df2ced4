// Package logdtest starts real logd nodes inside an application's Go
// tests: the same server `logd serve` runs, in the test's process, on
// 127.0.0.1 with a fresh data directory, so a test talks to logd over its
// real gRPC and HTTP APIs with package client (or any gRPC or HTTP tool)
// and needs no logd binary, container or network.
//
//	func TestOrders(t *testing.T) {
//		node := logdtest.Start(t) // stopped and removed when the test ends
//		c := node.Client(t)        // a *client.Client, closed when the test ends
//		_, err := c.Admin().CreateTopic(t.Context(), "orders", client.TopicOptions{Partitions: 3})
//		...
//	}
//
// StartCluster starts several nodes that form a cluster (each partition
// replicated on up to three of them), for tests of failover: stop a node
// with Node.Stop and start it again with Node.Restart, which resumes from
// its data directory on the same addresses.
//
// Start and StartCluster take a testing.TB and stop everything when the
// test ends; NewNode and NewCluster do the same for callers without one
// (a TestMain, an example) and leave Close to the caller.
//
// What a node is: a single node runs alone (replicas 1) with the server's
// defaults, fsync included (every acknowledged record is on disk), its gRPC
// API on Node.Addr and its HTTP API (docs/http.md, /metrics) on
// Node.HTTPAddr. It logs nowhere unless Options.Logger is set. Ports are
// picked below the kernel's ephemeral range, so a test's outgoing
// connections never take them and a restart gets the same ones back. The
// Kafka listener is not started.
package logdtest
