// Package kafka is logd's Kafka wire-protocol front-end: a TCP listener that
// lets the clients and tools Kafka users already have (franz-go, librdkafka
// and kcat, confluent-kafka-python, kafkajs, ...) produce to, consume from and
// administer a logd node unmodified.
//
// # What it owns
//
// Only translation. Every request is decoded with
// github.com/twmb/franz-go/pkg/kmsg, turned into calls on the node's core
// (package broker, through the Core interface) or its group coordinator
// (package groups), and the answers are encoded with kmsg again. No storage,
// dedup, routing or group logic lives here: a Kafka producer's batch is
// handed to the core as the client sent it (the core checks it and stores it
// as sent), a fetch serves the stored batches as they are, and a Kafka
// consumer group is the same group logd's own clients join. Broker errors are
// mapped to Kafka error codes in one place (errors.go).
//
// One file per API, named after its key (00_produce.go, 01_fetch.go, ...),
// each a function from a kmsg request to a kmsg response; versions.go is the
// table of what is implemented, and ApiVersions advertises exactly that
// table.
//
// # Wire format
//
// Kafka's: every request and response is a frame
//
//	int32 size (bytes that follow, big-endian)
//	request:  int16 api key, int16 api version, int32 correlation id,
//	          nullable string client id, [tagged fields if flexible], body
//	response: int32 correlation id, [tagged fields if flexible, except
//	          ApiVersions], body
//
// # The connection loop
//
// A connection has one reader and one writer goroutine. The reader reads a
// frame (at most Config.MaxRequestBytes; a larger size closes the
// connection), decodes it and starts the request: the start runs in the
// reader, in arrival order, so that produces on one connection are appended
// in the order they were sent (Kafka's max.in.flight pipelining, and the
// idempotent producer's sequence order, rely on it). What may block (a
// produce waiting for its acknowledgement, a fetch's long poll, a group join)
// finishes in its own goroutine. The writer sends the responses strictly in
// request order. At most Config.MaxInFlight requests are outstanding per
// connection; the reader stops reading until the oldest is answered, so a
// client that never reads its responses holds no more than that.
//
// # Memory a connection may hold
//
// Before a connection is admitted (under --auth required: until it logs
// in), a frame is at most Config.MaxPreAuthRequestBytes (512 KiB, Kafka's
// sasl.server.max.receive.size), as are the bare tokens of a SaslHandshake
// v0 exchange; a larger announced size closes the connection before any
// of it is read. Any frame's buffer grows as its bytes arrive, never from
// the announced size alone.
//
// A fetch reads under the node's read budget (package broker), which it
// returns as soon as the answer is read: from then on the answer's memory
// counts against the connection's own fetch budget
// (Config.MaxConnFetchBytes, 32 MiB, connBudget) until it is written. The
// reader reserves a fetch's share before starting it, in request order;
// past the bound it stops reading until earlier responses are written (a
// single fetch larger than the bound runs when nothing else is held). So
//
//   - a client that never reads its answers holds its connection's budget
//     and nothing of the node's: the other connections, and the gRPC and
//     HTTP reads, keep being served;
//   - pipelined fetches never deadlock: a fetch waits only on responses of
//     earlier requests, which are written without waiting on it.
//
// Responses are written 256 KiB at a time, each within Config.WriteTimeout
// (30 s): a client that stops reading is disconnected, which frees what
// its connection held. The listener holds at most Config.MaxConns
// connections (logd serve's --max-connections); one more is closed as soon
// as it is accepted.
//
// A frame that cannot be decoded (bad size, truncated, unknown API key, a
// version this listener does not advertise, trailing garbage is tolerated as
// Kafka does) closes that connection with one log line; it never panics the
// server and never reaches the core. ApiVersions at an unknown version is
// answered with UNSUPPORTED_VERSION and the supported table, as the protocol
// requires, so clients can downgrade. Produce with acks=0 gets no response.
//
// # Security
//
// With Config.TLS every connection completes its TLS handshake before its
// first request is read (Config.HandshakeTimeout), and a verified client
// certificate names the connection's principal. SaslHandshake (v0-1) and
// SaslAuthenticate (v0-2) log a connection in through Config.Gate's
// Authenticator (session.go holds the per-connection state machine):
// SCRAM-SHA-256 and SCRAM-SHA-512 anywhere, PLAIN only over TLS, refused
// at the handshake otherwise so the password is never sent in clear. A
// failed login is answered SASL_AUTHENTICATION_FAILED, then the connection
// closes. Under --auth required, a connection that has neither a verified
// certificate nor a completed login may send only ApiVersions,
// SaslHandshake and SaslAuthenticate; anything else closes it unanswered,
// as Kafka does. The core gets the connection's principal with every call
// (broker.Principal: "User:alice", "" when anonymous) and its identity in
// the request context (auth.NewContext); its refusals map to
// TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED by the resource they name.
//
// # Invariants
//
//   - Responses on a connection are written in request order.
//   - No connection holds the node's read budget while its client reads.
//   - A login happens at most once per connection, before any request
//     other than ApiVersions, so every request of a connection runs as the
//     same principal.
//   - A request is passed to the core at most once; nothing is retried here.
//   - Closing the Server closes every connection and waits for every
//     goroutine it started.
package kafka
