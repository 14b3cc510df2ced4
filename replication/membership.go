package replication

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// ReplicaStatus is a replica's view of its group, for `logd cluster
// status` and the per-partition Raft metrics.
type ReplicaStatus struct {
	Group        string
	State        raft.RaftState
	Term         uint64
	LeaderID     raft.ServerID
	LeaderAddr   raft.ServerAddress
	FirstIndex   uint64 // Raft indexes stored in the log
	LastIndex    uint64
	CommitIndex  uint64
	AppliedIndex uint64
	// Offsets of the replica's log.
	LogStartOffset int64
	HighWatermark  int64
	NextOffset     int64
	Servers        []raft.Server // latest configuration
	// Asleep: the replica's Raft is stopped (sleep.go); State is
	// raft.Shutdown, and the leader is the one it knew when it fell asleep.
	Asleep bool
}

// Status reports the replica's state.
func (p *Replica) Status() ReplicaStatus {
	addr, id := p.r().LeaderWithID()
	s := ReplicaStatus{
		Group:          p.group,
		State:          p.r().State(),
		Term:           p.r().CurrentTerm(),
		LeaderID:       id,
		LeaderAddr:     addr,
		FirstIndex:     p.log.FirstIndex(),
		LastIndex:      p.log.LastIndex(),
		CommitIndex:    p.r().CommitIndex(),
		AppliedIndex:   p.r().AppliedIndex(),
		LogStartOffset: p.log.StartOffset(),
		HighWatermark:  p.log.HighWatermark(),
		NextOffset:     p.log.NextOffset(),
	}
	if f := p.r().GetConfiguration(); f.Error() == nil {
		s.Servers = f.Configuration().Servers
	}
	if rec, ok := p.Slept(); ok {
		s.Asleep, s.LeaderID, s.LeaderAddr = true, rec.LeaderID, rec.LeaderAddr
	}
	return s
}

// AddVoter adds a replica to the group (called on the leader). The new
// replica catches up from the leader's log; if the leader's log no longer
// starts at index 1, by segment copy (see the package comment).
func (p *Replica) AddVoter(id raft.ServerID, addr raft.ServerAddress, timeout time.Duration) error {
	in := p.inst()
	return p.membership("add voter "+string(id), in.await(in.AddVoter(id, addr, 0, timeout)))
}

// RemoveServer removes a replica from the group (called on the leader; a
// leader removing itself steps down once the change commits).
func (p *Replica) RemoveServer(id raft.ServerID, timeout time.Duration) error {
	in := p.inst()
	return p.membership("remove server "+string(id), in.await(in.RemoveServer(id, 0, timeout)))
}

// TransferLeadership hands the group's leadership to another voter (leader
// spreading), and returns once the transfer is done or has failed. Raft
// answers a transfer it takes within twice its ElectionTimeout; one still
// queued when the instance shut down (the replica fell asleep, the node
// stops) it never answers, and a leader spreader waiting for that answer
// spread nothing more and held the node's shutdown for good (seen once in
// a burst over 10,000 partitions): await ends with the instance.
func (p *Replica) TransferLeadership(id raft.ServerID, addr raft.ServerAddress) error {
	in := p.inst()
	return p.membership("transfer leadership to "+string(id), in.await(in.LeadershipTransferToServer(id, addr)))
}

func (p *Replica) membership(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, raft.ErrNotLeader) {
		addr, id := p.r().LeaderWithID()
		return &NotLeaderError{Group: p.group, LeaderID: id, Leader: addr, Cause: err}
	}
	return fmt.Errorf("replication: %s: %s: %w", p.group, what, err)
}
