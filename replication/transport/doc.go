// Package transport multiplexes every Raft group of a node over one TCP
// listener: the node's one Raft port.
//
// A Mux owns the listener; Mux.Group registers a group and returns its
// raft.StreamLayer, handed to raft.NewNetworkTransport. Group.Dial opens a
// connection and writes a header naming the group (format in header.go); the
// accepting Mux reads it under a deadline and answers one status byte: the
// connection is queued on that group's Accept, or refused and closed when the
// header is bad, the group unknown or its bounded accept queue full. Dial
// returns the refusal as an error (ErrUnknownGroup, ErrBusy, ErrBadHeader),
// so Raft sees a failed dial, not a broken RPC.
//
// Invariants: a connection carries one group for its lifetime; every
// connection a group accepted or dialed is closed by Group.Close (Raft's
// NetworkTransport.Close does not close its pooled or served connections, so
// the group does); Mux.Close closes every group and waits for its goroutines.
package transport
