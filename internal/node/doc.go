// Package node puts a logd node together, as etcd's embed does: it is the
// one place that knows every part of a node and the order they start and
// stop in. cmd/logd's serve turns flags into a Config and runs Start; the
// test harnesses (nodetest, logdtest, torture) start nodes the same way.
//
// Config embeds broker.Config (the core's settings, as they are) and adds
// what the node serves it on: the gRPC, HTTP and Kafka addresses, the
// connection caps, TLS, the Raft port's TLS, pprof.
//
// Start, in order:
//
//  1. checks every listen address, loads the TLS files (one set for the
//     API, the HTTP port and the Kafka listener; the Raft port's own), and
//     wraps the Raft listener and dialer in mutual TLS (rafttls.go);
//  2. listens on the HTTP port, so /healthz answers while a large log is
//     recovered (/readyz says when it is done; / answers 503 until then);
//  3. opens the broker, with the node's Prometheus registry (and, in a
//     cluster, joinLookup for the --join node's Raft address);
//  4. starts each front-end on the broker (frontEnd.Start): the gRPC API,
//     the Kafka listener, the HTTP port's JSON API;
//  5. calls broker.Ready with the addresses they serve, and is ready.
//
// Close drains (not ready; the broker refuses new requests and wakes long
// polls and subscriptions), closes the front-ends (Kafka, then gRPC,
// letting calls in flight finish), closes the broker (fsync), then what
// outlives it: the connections to other nodes, the Raft listener, and
// last the HTTP port, which answers probes until then.
//
// ReloadTLS (SIGHUP) re-reads the TLS files of every listener at once;
// the files are also re-read when they change.
//
// # Files
//
//	node.go        Node: Start, Close, ReloadTLS, the frontEnd interface
//	config.go      Config and its defaults
//	frontends.go   the gRPC API and the Kafka listener as front-ends
//	http.go        the HTTP port: JSON API, /metrics, /healthz, /readyz, pprof
//	httpauth.go    the HTTP port's authentication and probe reserve; the warning on an open node
//	conns.go       the connection caps
//	listenaddr.go  address checks and listen errors
//	joinlookup.go  the --join node's Raft address, through its public Status
//	tls.go         the front-ends' certificates
//	rafttls.go     mutual TLS on the Raft port
//	testing.go     hooks for tests
package node
