// Package raftrpc is a raft.Transport for many Raft groups on one node:
// every group's RPCs to a peer share one channel per direction, instead of
// hashicorp/raft's NetworkTransport connections per group, so that a
// node's sockets and buffers do not grow with its groups.
//
// A Hub is the node's: it owns one outgoing link per peer address (a
// connection of the node's transport.Mux group ChannelID, a direct group:
// a TCP connection of its own, no yamux) and serves the links peers open
// to it. Hub.Group returns one group's Transport,
// handed to raft.NewRaft. While a group is idle it holds nothing per peer:
// its Transport is a few hundred bytes (a consumer channel, a bounded
// inbound queue, no goroutine); a link holds one reader goroutine, one
// writer goroutine, and buffers that grow only while a large append is
// under way and are dropped after it.
//
// # Frames
//
// A link starts with the preface "LDRP" and a version byte (1), written by
// the dialer. Then frames, big-endian:
//
//	request  (dialer -> acceptor)
//	0  4  length   bytes after this field
//	4  1  type     0 AppendEntries, 1 RequestVote, 3 TimeoutNow, 4 RequestPreVote,
//	               5 AppendEntries without entries (compact.go)
//	5  8  id       request id, unique on the link
//	13 2  n        group id length
//	15 n  group    group id
//	..    payload  the raft request struct, msgpack (hashicorp's encoding),
//	               but for type 5
//
//	response (acceptor -> dialer)
//	0  4  length
//	4  1  status   0x80 ok: payload is the raft response, msgpack;
//	               0x81 error: payload is the error text;
//	               0x82 ok: an AppendEntries answer (compact.go)
//	5  8  id       the request's id
//	13 .. payload
//
// A frame longer than MaxFrame, an unknown type or status, or a payload
// that does not decode closes the link (the peer is of another version or
// broken); nothing panics on bad input. An answer to no pending request
// (its call timed out) is dropped.
//
// # Writing and reading
//
// A link has one writer: callers append encoded frames to the link's
// pending buffer and wake it; it swaps the buffer out and writes every
// frame queued meanwhile in one Write. Heartbeats and commit notices of
// hundreds of groups to the same peer so go out in a few syscalls. On a
// TCP connection an append's entries of 4 KiB or more are not copied into
// that buffer: they are written from their own bytes (the bytes the
// leader's log stored), in place, by one writev with the buffer's other
// bytes (vector.go). The writes have no deadline: a peer that reads slowly
// makes the writer wait for the connection's window, and the calls queued
// meanwhile time out each on its own (Calls), not all at once with the
// link; a link whose calls time out while it read nothing at all for
// Config.Silence (30s, the Mux session keep-alive's bound) is failed and
// the next call dials a new one. The reader reads through a 32 KiB
// buffer, and a large frame's bytes straight into the frame. The
// requests of calls that ended (timed out) while they waited are dropped
// before the write, so a peer that reads again gets no stale retries. It has
// one reader, which never blocks on a group, nor on a lock the calls take
// (the Hub finds groups and links in sync.Maps: a reader queued on a
// Hub-wide mutex behind a thousand groups' votes stopped reading on a
// starved node, and its peers' writes timed out):
//
//   - a heartbeat (an AppendEntries without entries, log position or
//     commit index) takes Raft's fast path in the reader when that is safe:
//     the group's Raft is a follower of a term at least the heartbeat's (the
//     rule of replication.NetworkTransport, kept as is); else it is
//     queued like any other RPC;
//   - every other RPC goes to its group's inbound queue (QueueLen). A group
//     drains its queue in one goroutine, started when the queue gets an RPC
//     and ended when it is empty: it hands each RPC to Raft (Consumer) and
//     sends Raft's answer back. A full queue, a closed or unknown group
//     answers the RPC with an error at once, which Raft treats as a network
//     error and retries after its backoff. So a group whose Raft loop is
//     stuck delays only its own RPCs.
//
// # Calls
//
// A call registers its id on the link, queues its frame and waits for the
// answer, up to Config.Timeout (10s, as NetworkTransport's). A link that
// fails (read or write error, bad frame, peer closed) fails every pending
// call at once with its error and is dropped; the next call dials a new
// one. The pipeline (AppendEntriesPipeline) sends without waiting and
// hands the answers to Raft in the order of the requests, at most
// PipelineDepth in flight; after handing over an answer Raft's decoder
// stops at (a refusal, a newer term, an error) it shuts itself down, for
// the reason replication/pipeline.go gives.
//
// # Snapshots
//
// InstallSnapshot streams a snapshot of any size with flow control, so it
// does not use the link: it dials the group's own stream layer (a yamux
// stream of that group on the Mux, as the segment copy does), writes
// SnapshotMagic, the request (msgpack) and the data, and reads the answer
// (error text and response, msgpack). The group's stream layer hands such
// a connection to Transport.ServeSnapshot.
//
// # Compatibility
//
// Nodes of this version and older ones do not talk: an older node has no
// ChannelID group (the Mux refuses the link), does not know a direct
// connection's preface and does not know SnapshotMagic; nodes are
// upgraded together, as for the Mux sessions.
package raftrpc
