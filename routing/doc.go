// Package routing holds the rules a client and the server must apply
// identically, so that both compute the same answer: which partition a
// keyed record belongs to, and which topic names are valid.
//
//   - ForKey(key, n) is Kafka's toPositive(murmur2(key)) % n
//     (org.apache.kafka.common.utils.Utils.murmur2 with its positive mask),
//     so a key lands on the partition a Kafka client would choose. Records
//     with an explicit partition or without a key are not routed here.
//   - A topic name matches [A-Za-z0-9._-]{1,249} and is neither "." nor "..".
//
// It is a leaf: it imports only the standard library, so the Go client links
// it without the server's dependencies (Pebble, Raft, Prometheus).
// routing_test.go checks the hash against Kafka's own test vectors.
package routing
