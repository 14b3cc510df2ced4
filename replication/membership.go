package replication

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// PartitionStatus is a replica's view of its group, for `logd cluster
// status` and the per-partition Raft metrics.
type PartitionStatus struct {
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
func (p *Partition) Status() PartitionStatus {
	addr, id := p.r().LeaderWithID()
	s := PartitionStatus{
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
func (p *Partition) AddVoter(id raft.ServerID, addr raft.ServerAddress, timeout time.Duration) error {
	return p.membership("add voter "+string(id), p.r().AddVoter(id, addr, 0, timeout).Error())
}

// RemoveServer removes a replica from the group (called on the leader; a
// leader removing itself steps down once the change commits).
func (p *Partition) RemoveServer(id raft.ServerID, timeout time.Duration) error {
	return p.membership("remove server "+string(id), p.r().RemoveServer(id, 0, timeout).Error())
}

// TransferLeadership hands the group's leadership to another voter (leader
// spreading), and returns once the transfer is done or has failed, or
// after transferWait. Raft answers a transfer it started within twice its
// ElectionTimeout, but never one still queued when its instance shut down
// (the replica went to sleep, or the node stops): a leader spreader
// waiting for that answer spread nothing more, and held the node's
// shutdown for good (seen once in a burst over 10,000 partitions).
func (p *Partition) TransferLeadership(id raft.ServerID, addr raft.ServerAddress) error {
	f := p.r().LeadershipTransferToServer(id, addr)
	return p.membership("transfer leadership to "+string(id), waitFuture(f, p.transferWait()))
}

// transferWait is how long TransferLeadership waits for Raft's answer:
// twice the leader's ElectionTimeout, and a second more.
func (p *Partition) transferWait() time.Duration {
	return 2*p.leaderCfg.ElectionTimeout + time.Second
}

// errNoAnswer: Raft did not answer a request within the time it answers
// one it handles (its instance shut down with the request queued).
var errNoAnswer = errors.New("no answer from raft (its instance shut down?)")

// waitFuture returns f's error, or errNoAnswer after limit. A goroutine
// waits for f meanwhile: it ends when Raft answers, and stays (a few
// hundred bytes) if Raft never does.
func waitFuture(f raft.Future, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errNoAnswer
	}
}

func (p *Partition) membership(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, raft.ErrNotLeader) {
		addr, id := p.r().LeaderWithID()
		return &NotLeaderError{Group: p.group, LeaderID: id, Leader: addr, Cause: err}
	}
	return fmt.Errorf("replication: %s: %s: %w", p.group, what, err)
}
