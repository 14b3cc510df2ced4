// Package httpapi is logd's HTTP front-end: the JSON API under /v1/, the
// live tail of a topic as Server-Sent Events, and the web console at /. Like
// the gRPC and Kafka front-ends it only translates: every request is one or
// a few calls on the core (package broker) through the Core interface, and
// every core error becomes an HTTP status in one place (errors.go). A node
// serves it over broker.AnyNode: in a cluster any node answers any
// request, the core passing on to the node that leads what it needs.
//
// # Endpoints (docs/http.md has examples)
//
//	GET  /v1/topics                       topics with their partitions
//	POST /v1/topics                       create a topic (configs by Kafka name)
//	GET  /v1/topics/{topic}               one topic
//	PATCH /v1/topics/{topic}              change a topic's settings live
//	POST /v1/topics/{topic}/records       produce; Idempotency-Key makes retries safe
//	GET  /v1/topics/{topic}/records       ?partition=P&offset=O (or time=T)&max=N, bounded
//	GET  /v1/topics/{topic}/events        live tail (text/event-stream)
//	GET  /v1/groups                       consumer groups
//	GET  /v1/groups/{group}               members, assignment, committed offsets, lag
//	GET  /v1/cluster                      nodes and this node
//	GET  /v1/cluster/record-counts        each node's records appended and served, by topic
//	GET  /                                the console (files embedded with go:embed)
//
// A record in JSON is the object `logd consume --json` prints: topic,
// partition, offset, key (null when absent), value, timestamp (RFC 3339,
// ms), headers when present; a key or value that is not UTF-8 is base64 with
// key_encoding / value_encoding "base64". A produced value is a JSON string
// (stored as its UTF-8 bytes) or {"base64": "..."}.
//
// # Errors
//
// Every failed request answers {"error": "what went wrong and what to do"}
// with the status of docs/http.md's table (unknown topic 404, bad input
// 400, body over the limit 413, offset out of range 416, not leader 421
// with the leader's HTTP address, ...). A produce is validated whole before
// anything is written: a request with one bad record writes none.
//
// # Browsers
//
// Guard (guard.go), which the node puts in front of the whole HTTP port,
// refuses writes from web pages of other origins unless
// --http-allowed-origins names them, serves only local Host names on a
// loopback port (DNS rebinding), and forbids framing. A produce body must
// be declared application/json (415 otherwise: the types a page may send
// without a CORS preflight are all refused) and be UTF-8 (400 otherwise).
// The live tail also answers, with credentials, the origins of the
// cluster's own nodes' HTTP addresses, and the console's CSP lets it
// connect to those only: the console resumes its tail on another node
// when its own stops (console_nodes.go).
//
// # Idempotency
//
// POST with an Idempotency-Key header produces each partition's records as
// one idempotent batch of a producer id derived from the key (SHA-256,
// 63 bits), epoch 0, sequence 0. A retry with the same key and records is a
// duplicate of a remembered batch: the core answers the original offsets
// and writes nothing. The core remembers a producer's batches as it does a
// Kafka producer's (see package partition: in memory, rebuilt from recent
// segments on restart, the least recently used of 10,000 producers per
// partition forgotten first). Unkeyed records without a partition go to one
// partition chosen from the key, so a retry routes them the same way.
//
// # Live tail and the event id
//
// Each SSE event is one record: `event: record`, `data:` its JSON, and
// `id:` the stream's position after it: for every partition of the stream,
// in partition order, "P:N" where N is the next offset to send, joined by
// commas (e.g. "0:42,1:17,2:9"). Before the first record the stream sends
// its starting position as an id-only event, so a client that reconnects
// before any record has one too. A request with a Last-Event-ID header (or
// last_event_id query parameter) resumes every partition it names at
// exactly that offset, whatever from= says: no record is sent twice and
// none is skipped, as long as retention has not removed it (then the
// stream sends `event: error` and ends). Partitions it does not name start
// at from= (default latest). With group=G the stream commits its position
// as G's offsets after each write (at-most-once) and, without an event id,
// starts where G committed.
//
// # Bounded memory
//
// A stream reads each partition on a goroutine of its own (in a cluster,
// each waits on its partition's leader) and holds at most one read per
// partition (maxStreamBytes shared between them, at least 16 KiB each); a
// partition is read again only after its previous read is written to the
// connection. A partition whose reads fail with an error that passes (no
// leader, a node that does not answer) is retried, up to streamRetryFor,
// while the others go on. A write that waits longer than Config.SendTimeout (the client
// reads nothing) ends the stream and closes the connection: a slow reader
// falls behind in the log, never in server memory. A comment line every
// Config.Heartbeat keeps proxies from closing an idle stream.
package httpapi
