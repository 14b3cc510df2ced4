package replication

import (
	"errors"

	"github.com/hashicorp/raft"
)

// Sentinel errors of the package. Returned errors wrap one of them (or are
// a *NotLeaderError, which matches ErrNotLeader) with context.
var (
	// ErrNotBatch: a Raft command entry that is not exactly one valid Kafka
	// v2 record batch. A partition group's commands are batches only.
	ErrNotBatch = errors.New("replication: command entry is not one record batch")
	// ErrDeleteRange: a DeleteRange that is neither a suffix truncation, a
	// compaction, nor the removal of every entry after a snapshot restore.
	ErrDeleteRange = errors.New("replication: unexpected delete range")
	// ErrOffsetGap: appending would give records other offsets than the
	// leader gave them (a replica restarting from a snapshot whose log does
	// not end where the snapshot's high watermark is). The replica refuses
	// rather than renumber them, and stays behind until a catch-up by
	// segment copy succeeds.
	ErrOffsetGap = errors.New("replication: log offsets would diverge from the leader's")
	// ErrNotLeader is returned by Replica.Append on a replica that is not the
	// group's leader; NotLeaderError carries the leader's address when known.
	ErrNotLeader = errors.New("replication: not the leader")
	// ErrOutcomeUnknown: an append's context ended before Raft answered;
	// the batch may or may not commit.
	ErrOutcomeUnknown = errors.New("replication: append outcome unknown")
	// ErrKeyNotFound is StableStore.Get's answer for a missing key. Raft tells
	// it from a failure by its text, "not found" (as with raft's InmemStore and
	// raft-boltdb), so the text must not change.
	ErrKeyNotFound = errors.New("not found")
)

// AsNotLeader returns a *NotLeaderError for group when err is one of
// Raft's answers that this replica does not (or no longer) lead -- naming
// the leader r knows -- and nil for any other error.
func AsNotLeader(group string, r *raft.Raft, err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		addr, id := r.LeaderWithID()
		return &NotLeaderError{Group: group, LeaderID: id, Leader: addr, Cause: err}
	}
	return nil
}
