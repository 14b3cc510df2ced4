package broker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/txn"
)

// The transaction coordinator's types and errors, named here so that the
// front-ends import the broker only.
type (
	// TxnPartition names a partition in a transaction.
	TxnPartition = txn.TopicPartition
	// TxnOffset is an offset sent to a transaction.
	TxnOffset = txn.Offset
	// TxnError is a refused transactional request (its Code says why).
	TxnError = txn.Error
)

// The codes of a TxnError.
const (
	TxnProducerFenced  = txn.CodeProducerFenced
	TxnInvalidState    = txn.CodeInvalidState
	TxnConcurrent      = txn.CodeConcurrent
	TxnUnknownProducer = txn.CodeUnknownProducer
	TxnInvalidTimeout  = txn.CodeInvalidTimeout
)

// txnHolder holds the node's transaction coordinator (package txn,
// docs/transactions.md): where the consumer-group coordinator runs (on a
// node that runs alone, always; in a cluster on the metadata leader
// only), made when first asked for there from the records the control
// plane holds, and dropped once the node is found no longer leading
// (asked, or by watch). watch also ticks it every second: timeouts, and
// the records a failed or previous coordinator left in flight.
type txnHolder struct {
	b  *Broker
	mu sync.Mutex
	c  *txn.Coordinator
	// term is the metadata term c was made in: a node that lost the
	// lead and won it back made c from records another leader may have
	// changed since.
	term   uint64
	closed bool
}

// txnTickTimeout bounds one tick's writes (markers, records).
const txnTickTimeout = 10 * time.Second

func (h *txnHolder) get(ctx context.Context) (*txn.Coordinator, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, kind.ErrShuttingDown
	}
	term := h.b.plane.metaTerm()
	leader, leads := h.b.plane.metaLeader()
	if !leads {
		h.c = nil
		return nil, &NotCoordinatorError{Leader: leader}
	}
	if h.c != nil && h.term == term {
		return h.c, nil
	}
	h.c = nil
	rctx, cancel := context.WithTimeout(ctx, restoreTimeout)
	defer cancel()
	encs, err := h.b.plane.txnRecords(rctx)
	if err != nil {
		var nl *NotLeaderError
		if errors.As(err, &nl) {
			return nil, &NotCoordinatorError{Leader: nl.Leader}
		}
		return nil, err
	}
	var recs []txn.Record
	for id, enc := range encs {
		r, err := txn.DecodeRecord(enc)
		if err != nil {
			h.b.logger.Warn("a transactional id's record does not decode: it starts anew", "transactional_id", id, "err", err)
			continue
		}
		recs = append(recs, r)
	}
	st := txnStore{b: h.b, term: term}
	h.c, h.term = txn.New(txn.Config{Store: st, Writer: txnWriter{st}, Records: recs, NewProducerID: newProducerID, Log: h.b.logger.With("meta_term", term)}), term
	return h.c, nil
}

// watch ticks the coordinator every second while this node leads (making
// it first when no request has), until ctx ends.
func (h *txnHolder) watch(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		_, leads := h.b.plane.metaLeader()
		if !leads || h.b.plane.metaTerm() != h.term {
			h.c = nil
		}
		c := h.c
		h.mu.Unlock()
		if c == nil && leads {
			// Take the records over without waiting for a request: a
			// transaction left open (its producer gone) is aborted at
			// its timeout, and one left being ended is finished, though
			// no client asks this node anything.
			c, _ = h.get(ctx)
		}
		if c == nil {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, txnTickTimeout)
		if err := c.Tick(tctx); err != nil && ctx.Err() == nil {
			h.b.logger.Warn("transactions: ending a transaction failed; retried in a second", "err", err)
		}
		cancel()
	}
}

func (h *txnHolder) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed, h.c = true, nil
}

// newProducerID is a fresh producer id, random in 63 bits (as
// NewProducerID's).
func newProducerID() (int64, error) {
	var buf [8]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(buf[:]) >> 1), nil
}

// txnStore is the coordinator's Store: the control plane, for the
// coordinator made in metadata term term. A coordinator holds the
// records in memory as they were when it was made: once the term moved
// on (this node lost the lead, though it may have won it back) another
// leader's coordinator may have changed them, and a step of the earlier
// coordinator still under way (waiting for the id's lock, or for its
// markers) would answer from memory or write a record made from it over
// the newer one. So such a coordinator's writes and answers are refused
// with *NotCoordinatorError (the client asks again, and the node's
// current coordinator answers), and its records are applied only from
// an entry of its own term (meta.Command.Term), which a write proposed
// after the term moved on is not.
type txnStore struct {
	b    *Broker
	term uint64
}

func (s txnStore) Put(ctx context.Context, r txn.Record) error {
	if err := s.current(); err != nil {
		return err
	}
	err := s.b.plane.putTxn(ctx, r.ID, r.Encode(), s.term)
	if err != nil {
		if cerr := s.current(); cerr != nil {
			return cerr
		}
	}
	return err
}

// Confirm: in a cluster a read barrier on the metadata leader, in the
// coordinator's term.
func (s txnStore) Confirm(ctx context.Context) error {
	if err := s.b.plane.currentMeta(ctx); err != nil {
		return err
	}
	return s.current()
}

// current is nil while the metadata term is the coordinator's, else
// *NotCoordinatorError.
func (s txnStore) current() error {
	if s.b.plane.metaTerm() == s.term {
		return nil
	}
	leader, leads := s.b.plane.metaLeader()
	if leads {
		leader = Node{}
	}
	return &NotCoordinatorError{Leader: leader}
}

// txnCoordinator authorizes op on transactional id for pr and returns
// the coordinator.
func (b *Broker) txnCoordinator(ctx context.Context, pr Principal, op auth.Operation, id string) (*txn.Coordinator, error) {
	if id == "" {
		return nil, kind.Errorf(kind.ErrInvalidArgument, "transactional id: must not be empty")
	}
	if err := b.Authorize(ctx, pr, op, auth.TransactionalID(id)); err != nil {
		return nil, err
	}
	return b.txns.get(ctx)
}

// CoordinatesTxn answers FindCoordinator for a transactional id: nil on
// the node that coordinates transactions, else *NotCoordinatorError
// naming it (it is the group coordinator's node); pr needs describe on
// the id.
func (b *Broker) CoordinatesTxn(ctx context.Context, pr Principal, id string) error {
	_, err := b.txnCoordinator(ctx, pr, auth.OpDescribe, id)
	return err
}

// InitTransactions answers InitProducerId with a transactional id: the
// id's producer id and a new epoch, which fences the previous one (see
// txn.Coordinator.InitProducerID); pid and epoch are the producer's
// current ones, or -1.
func (b *Broker) InitTransactions(ctx context.Context, pr Principal, id string, timeout time.Duration, pid int64, epoch int16) (int64, int16, error) {
	c, err := b.txnCoordinator(ctx, pr, auth.OpWrite, id)
	if err != nil {
		return 0, 0, err
	}
	return c.InitProducerID(ctx, id, timeout, pid, epoch)
}

// AddPartitionsToTxn adds partitions to id's transaction. Each partition
// pr may not write, or that does not exist, is answered with its error
// in errs (by index), and then none is added (Kafka's answer).
func (b *Broker) AddPartitionsToTxn(ctx context.Context, pr Principal, id string, pid int64, epoch int16, parts []TxnPartition) (errs []error, err error) {
	c, err := b.txnCoordinator(ctx, pr, auth.OpWrite, id)
	if err != nil {
		return nil, err
	}
	errs = make([]error, len(parts))
	failed := false
	for i, tp := range parts {
		if errs[i] = b.Authorize(ctx, pr, auth.OpWrite, auth.Topic(tp.Topic)); errs[i] == nil {
			errs[i] = b.partitionExists(ctx, tp.Topic, tp.Partition)
		}
		failed = failed || errs[i] != nil
	}
	if failed {
		return errs, nil
	}
	return errs, c.AddPartitions(ctx, id, pid, epoch, parts)
}

// partitionExists: the topic exists (in a cluster, as the metadata says)
// with the partition.
func (b *Broker) partitionExists(ctx context.Context, topic string, part int32) error {
	cfg, err := b.topics.Config(topic)
	if err != nil {
		return b.topicLookup(ctx, topic, err)
	}
	if part < 0 || part >= cfg.Partitions {
		return partitionRange(topic, cfg.Partitions, part)
	}
	return nil
}

// AddOffsetsToTxn adds a group to id's transaction: pr needs write on
// the id and read on the group.
func (b *Broker) AddOffsetsToTxn(ctx context.Context, pr Principal, id string, pid int64, epoch int16, group string) error {
	c, err := b.txnCoordinator(ctx, pr, auth.OpWrite, id)
	if err != nil {
		return err
	}
	if err := b.Authorize(ctx, pr, auth.OpRead, auth.Group(group)); err != nil {
		return err
	}
	return c.AddOffsets(ctx, id, pid, epoch, group)
}

// TxnCommitOffsets answers TxnOffsetCommit: a group's offsets, committed
// if id's transaction commits. A member and generation given (KIP-447)
// must be the group's current ones, as for a commit of its own.
func (b *Broker) TxnCommitOffsets(ctx context.Context, pr Principal, id string, pid int64, epoch int16, group, member string, generation int32, offs []TxnOffset) error {
	return b.txnCommitOffsets(ctx, pr, id, pid, epoch, group, member, generation, offs, false)
}

// TxnCommitOffsetsAdding is TxnCommitOffsets for a producer of
// transaction version 2 (KIP-890 part 2, TxnOffsetCommit v5): the group
// joins id's transaction with its offsets (one is begun when none is
// ongoing), as AddOffsetsToTxn would add it, under the same
// authorization (write on the id, read on the group and the topics).
func (b *Broker) TxnCommitOffsetsAdding(ctx context.Context, pr Principal, id string, pid int64, epoch int16, group, member string, generation int32, offs []TxnOffset) error {
	return b.txnCommitOffsets(ctx, pr, id, pid, epoch, group, member, generation, offs, true)
}

func (b *Broker) txnCommitOffsets(ctx context.Context, pr Principal, id string, pid int64, epoch int16, group, member string, generation int32, offs []TxnOffset, add bool) error {
	c, err := b.txnCoordinator(ctx, pr, auth.OpWrite, id)
	if err != nil {
		return err
	}
	if err := b.Authorize(ctx, pr, auth.OpRead, auth.Group(group)); err != nil {
		return err
	}
	for _, o := range offs {
		if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(o.Topic)); err != nil {
			return err
		}
	}
	if member != "" || generation >= 0 {
		if err := b.coord.validateCommit(group, member, generation); err != nil {
			return err
		}
	}
	return c.CommitOffsets(ctx, id, pid, epoch, group, offs, add)
}

// EndTxn commits or aborts id's transaction, once its markers are
// written (and, for a commit, its offsets committed).
func (b *Broker) EndTxn(ctx context.Context, pr Principal, id string, pid int64, epoch int16, commit bool) error {
	c, err := b.txnCoordinator(ctx, pr, auth.OpWrite, id)
	if err != nil {
		return err
	}
	return c.End(ctx, id, pid, epoch, commit)
}

// EndTxnBump commits or aborts id's transaction and bumps its epoch
// (transaction version 2, EndTxn v5; txn.Coordinator.EndBump): it
// answers the producer id and epoch the producer goes on with.
func (b *Broker) EndTxnBump(ctx context.Context, pr Principal, id string, pid int64, epoch int16, commit bool) (int64, int16, error) {
	c, err := b.txnCoordinator(ctx, pr, auth.OpWrite, id)
	if err != nil {
		return 0, 0, err
	}
	return c.EndBump(ctx, id, pid, epoch, commit)
}
