// Package transport multiplexes every Raft group of a node over one TCP
// listener, the node's one Raft port, and every group's connections to a
// peer over a small fixed number of TCP connections.
//
// A Mux owns the listener; Mux.Group registers a group and returns its
// raft.StreamLayer, handed to raft.NewNetworkTransport, which stays
// hashicorp/raft's own: what it takes for a connection is a stream. (That
// is the metadata group's transport. Partition groups send their Raft RPCs
// over package replication/raftrpc's links, streams of one Mux group,
// raftrpc.ChannelID, shared by every partition; a partition's own streams
// carry only its snapshots and segment copies.)
//
// # Sessions
//
// A Mux keeps Config.Sessions (4) sessions per peer address; a group
// always uses the same one (a hash of its id). The first Dial on a session
// slot opens a TCP connection, writes the session preface (session.go) and
// runs a yamux session (github.com/hashicorp/yamux) over it; every later
// Dial of a group hashed to that slot opens a stream on that session. The
// peer's Mux accepts the connection, checks the preface, and routes each
// stream its dialer opens. Each node dials its own sessions to each peer,
// so a node pair holds at most 2 × Sessions TCP connections whatever the
// number of groups (before: about 3.8 connections per group and node, Raft
// pooling up to 3 per peer). More than one session per peer: each yamux
// session writes every frame through one goroutine, and on a node starved
// of CPU one writer for every group fell behind its keep-alives. Under
// each session a data frame's header and body go out in one write
// (coalesce.go), not the two yamux makes of them.
//
// # Direct groups
//
// Mux.DirectGroup registers a group whose Dial opens a TCP connection of
// its own instead of a stream: a preface of kind direct (identity.go),
// then the same group header and status byte as a stream's, and then the
// group's bytes with nothing between them and the socket. It is for a
// connection that carries many groups' traffic for long and multiplexes
// it itself (package raftrpc's links): a stream costs every byte two
// copies in yamux (into the session's send buffer; into the stream's
// receive buffer, read out again) and one more frame header per write. A
// direct connection has no keep-alive (its user notices silence: raftrpc
// Config.Silence) and writes a vector with one writev (Conn's
// WriteBuffers, Vectored) when it is a TCP connection without TLS.
//
// # Cluster identity
//
// Every session's and direct connection's preface carries the dialer's
// cluster id (identity.go);
// the acceptor refuses a session from a node of another cluster and
// answers with its own id, which the dialer checks too, so two nodes whose
// data directories belong to different clusters never exchange a Raft
// byte, whichever dials (*ClusterMismatchError, logged on both sides once
// a minute per peer). A node with no id yet (one joining, or a data
// directory of a version without ids) is not refused here: the cluster
// package makes sure a joining node learns its cluster's id before it
// takes part in Raft, and refuses a node the cluster does not know. A
// hello (Mux.Hello) is a preface answered with the node's cluster and node
// ids and no session: how a joining node learns the id, and how the
// metadata leader checks which node answers at a joining node's address.
// The id is not a secret and authenticates nobody: the Raft port's mutual
// TLS does that.
//
// Group.Dial writes a header naming the group on the new stream (format in
// header.go); the accepting Mux reads it under a deadline and answers one
// status byte: the stream is queued on that group's Accept (or handed to the
// function Group.Serve set, in the routing goroutine), or refused and
// closed when the header is bad, the group unknown or its bounded accept
// queue full. Dial returns the refusal as an error (ErrUnknownGroup,
// ErrBusy, ErrBadHeader), so Raft sees a failed dial, not a broken RPC.
//
// Failures: a session ends when its connection fails (the peer closed or
// restarted: a reset; a cut link), when a keep-alive ping is not answered
// within Config.KeepAliveTimeout (30s: a peer gone silent). Every stream on it
// then fails, Raft drops those connections as after any I/O error, and the
// next Dial to that address opens a new session. Raft's own deadlines
// (NetworkTransport's timeout, set on each stream) are unchanged, so an RPC
// to a slow peer fails as before, without closing the session.
//
// Backpressure: yamux gives each stream its own flow-control window (256
// KiB): a group whose reader stalls (a follower busy storing a large
// append, a catch-up copy) blocks only its own stream's writer, never the
// session's reader, so other groups' heartbeats and appends to that peer
// go on.
//
// Invariants: a stream carries one group for its lifetime; every stream a
// group accepted or dialed is closed by Group.Close (Raft's
// NetworkTransport.Close does not close its pooled or served connections,
// so the group does), which also fails a Read or Write blocked on it;
// Mux.Close closes every group and session and waits for its goroutines
// (yamux's keep-alive goroutine of a closed session ends on its own, at
// once).
//
// Compatibility: a node whose preface has another version (an earlier one:
// version 1 carried no cluster id, before it there was no preface) and a
// node of this one refuse each other's connections, so a cluster's nodes
// are upgraded together.
package transport
