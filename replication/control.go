package replication

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// What the rest of logd needs of a group's Raft instance is a method here
// (or in membership.go), so that no package outside replication holds a
// *raft.Raft: leadership, the latest configuration, and the proofs that
// let a leader serve writes (Leading) and reads (ConfirmRead).

// ReadBarrierTimeout bounds each barrier of a read's proof (ReadIndex), for
// the partition groups and the metadata group.
const ReadBarrierTimeout = 5 * time.Second

// IsLeader reports whether this replica leads its group in Raft's view
// now. That is no proof for serving a request: see Leading and
// ConfirmRead.
func (p *Replica) IsLeader() bool { return p.r().State() == raft.Leader }

// Leader returns the leader's id and Raft address as this replica knows
// them, empty when it knows none; while it sleeps, the leader it knew
// when it fell asleep.
func (p *Replica) Leader() (raft.ServerID, raft.ServerAddress) {
	if rec, ok := p.Slept(); ok {
		return rec.LeaderID, rec.LeaderAddr
	}
	addr, id := p.r().LeaderWithID()
	return id, addr
}

// Servers returns the group's latest configuration (committed or not).
func (p *Replica) Servers() ([]raft.Server, error) {
	f := p.r().GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("replication: %s: configuration: %w", p.group, err)
	}
	return f.Configuration().Servers, nil
}

// LastIndex is the index of the last entry in the replica's Raft log (or
// of its last snapshot).
func (p *Replica) LastIndex() uint64 { return p.r().LastIndex() }

// ConfirmRead makes a read served by this replica linearizable: it returns
// once a barrier started after the call committed and was applied here
// (ReadIndex.Confirm), so the read misses nothing acknowledged before it.
// It fails with a NotLeaderError naming the leader this replica knows when
// it does not, or no longer, leads; with another error (a timeout, ctx's)
// when leadership could not be confirmed.
func (p *Replica) ConfirmRead(ctx context.Context) error {
	err := p.reads.Confirm(ctx)
	if err == nil {
		return nil
	}
	if nl := AsNotLeader(p.group, p.r(), err); nl != nil {
		return nl
	}
	return fmt.Errorf("replication: %s: confirm leadership for a read: %w", p.group, err)
}
