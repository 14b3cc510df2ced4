package txn

import (
	"context"
	"math"
	"slices"
)

// Transaction version 2 (KIP-890 part 2). A producer that speaks it adds
// no partition and no group itself: its first batch in a partition adds
// the partition (AddPartition, asked by the partition's leader) and its
// offsets add their group (CommitOffsets with add). Its end bumps the
// epoch (EndBump): the markers carry the bumped epoch, which fences the
// transaction's epoch in each of its partitions, and the coordinator
// refuses that epoch everywhere else, so a late batch of a transaction
// can never join the next one. A producer that does not speak it keeps
// the rules of AddPartitions, AddOffsets and End: the coordinator decides
// per request, as Kafka does by request version.

// EndBump commits or aborts id's transaction and bumps the epoch: the
// decision is stored with the bumped epoch, the markers written with it,
// a commit's offsets committed, and the end stored. It answers the
// producer id and epoch the producer goes on with: the same id at the
// next epoch, or a new id at epoch 0 once the id has used its last
// epoch or transaction number. An abort with no transaction open is
// allowed and only bumps the epoch. A retry of an end (the same producer
// id, epoch and outcome, before the next transaction begins) is answered
// as the end was.
func (c *Coordinator) EndBump(ctx context.Context, id string, pid int64, epoch int16, commit bool) (_ int64, _ int16, err error) {
	e := c.lock(id)
	defer e.mu.Unlock()
	before := e.rec.Clone()
	defer func() { c.logEnd(ctx, "transactions: end (epoch bump)", id, pid, epoch, commit, before, e, err) }()
	want, done := PrepareAbort, CompleteAbort
	if commit {
		want, done = PrepareCommit, CompleteCommit
	}
	if en := e.rec.Ended; e.ok && en != nil && en.ProducerID == pid && en.Epoch == epoch && en.Commit == commit {
		switch e.rec.State {
		case want:
			if err := c.finish(ctx, e); err != nil {
				return 0, 0, err
			}
			return e.rec.ProducerID, e.rec.Epoch, nil
		case done:
			if err := c.cfg.Store.Confirm(ctx); err != nil {
				return 0, 0, err
			}
			return e.rec.ProducerID, e.rec.Epoch, nil
		}
	}
	if err := check(e, id, pid, epoch); err != nil {
		return 0, 0, err
	}
	switch e.rec.State {
	case Ongoing:
	case Empty, CompleteCommit, CompleteAbort:
		if commit {
			return 0, 0, errorf(CodeInvalidState, "transactional id %q: no transaction to commit (state %v)", id, e.rec.State)
		}
	default:
		return 0, 0, errorf(CodeConcurrent, "transactional id %q: the previous transaction is still being ended", id)
	}
	r := e.rec.Clone()
	if r.State != Ongoing {
		r.Partitions, r.Groups, r.Offsets = nil, nil, nil
	}
	r.State = want
	r.Ended = &Ended{ProducerID: pid, Epoch: epoch, Commit: commit}
	if r.Epoch >= math.MaxInt16-1 || r.Txn == math.MaxInt32 {
		np, err := c.cfg.NewProducerID()
		if err != nil {
			return 0, 0, err
		}
		r.Ended.NextProducerID = &np
	}
	r.Epoch++ // at most MaxInt16: the id is replaced past MaxInt16-1
	if err := c.put(ctx, e, r); err != nil {
		return 0, 0, err
	}
	if err := c.finish(ctx, e); err != nil {
		return 0, 0, err
	}
	return e.rec.ProducerID, e.rec.Epoch, nil
}

// AddPartition adds tp to id's transaction at pid and epoch, beginning
// one, for the leader of tp about to store the producer's first batch of
// a transaction there (a producer of transaction version 2 sends no
// AddPartitionsToTxn). It answers the transaction's number, as Verify
// does.
func (c *Coordinator) AddPartition(ctx context.Context, id string, pid int64, epoch int16, tp TopicPartition) (int32, error) {
	e := c.lock(id)
	defer e.mu.Unlock()
	if err := check(e, id, pid, epoch); err != nil {
		return 0, err
	}
	if err := c.addPartitions(ctx, e, []TopicPartition{tp}); err != nil {
		return 0, err
	}
	return e.rec.Txn, nil
}

// addGroup is r with group in its transaction, begun when none is
// ongoing (a TxnOffsetCommit of transaction version 2 adds its group).
func (c *Coordinator) addGroup(e *entry, group string) (Record, error) {
	r, err := c.begin(e)
	if err != nil {
		return r, err
	}
	if !slices.Contains(r.Groups, group) {
		r.Groups = append(r.Groups, group)
	}
	return r, nil
}
