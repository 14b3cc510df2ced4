package raftrpc

import (
	"time"

	"github.com/hashicorp/raft"
)

// Ack is what a peer last acknowledged of the group's log: the highest
// index an append of term Term that it accepted covers (its log matches
// the sender's up to there), and when it last accepted any append of the
// group, heartbeats included. A leader learns from it which followers
// hold an entry, which hashicorp/raft keeps to itself (replication's
// sleeping leader waits for every reachable voter to hold its sleep
// marker).
type Ack struct {
	Term, Index uint64
	At          time.Time
}

// Acked returns what peer id last acknowledged to this replica's appends
// (the zero Ack if nothing yet).
func (t *Transport) Acked(id raft.ServerID) Ack {
	t.ackMu.Lock()
	defer t.ackMu.Unlock()
	return t.acks[id]
}

// acked records an answer of peer id to an append: an accepted one moves
// its Ack on (a newer term starts it again, as the log may differ there).
func (t *Transport) acked(id raft.ServerID, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	if !resp.Success || resp.Term > args.Term {
		return
	}
	index := args.PrevLogEntry
	if n := len(args.Entries); n > 0 {
		index = args.Entries[n-1].Index
	}
	t.ackMu.Lock()
	defer t.ackMu.Unlock()
	if t.acks == nil {
		t.acks = map[raft.ServerID]Ack{}
	}
	a := t.acks[id]
	switch {
	case args.Term < a.Term:
		return
	case args.Term > a.Term:
		a = Ack{Term: args.Term}
	}
	a.Index = max(a.Index, index)
	a.At = time.Now()
	t.acks[id] = a
}
