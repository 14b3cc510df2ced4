package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// Commit sends the transaction's records not yet sent, then commits it:
// every record and offset of it becomes visible to read_committed
// readers. A failed write makes Commit fail (ErrInvalidTxnState wrapping
// it): abort the transaction then. ErrProducerFenced is final.
func (tx *Transaction) Commit(ctx context.Context) error {
	p := tx.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := tx.check(); err != nil {
		return err
	}
	if tps, bs := tx.takePending(); len(tps) > 0 {
		if err := tx.send(ctx, tps, bs); err != nil {
			return fmt.Errorf("%w: a write of the transaction failed, abort it: %w", ErrInvalidTxnState, err)
		}
	}
	if tx.begun {
		if err := p.end(ctx, true); err != nil {
			return p.failed(fmt.Errorf("commit transaction of %q: %w", p.id, err))
		}
	}
	tx.ended, p.open = true, nil
	return nil
}

// Abort ends the transaction without any of it becoming visible: its
// records not yet sent are dropped, those sent are aborted, its offsets
// are not committed. The producer can then Begin the next one.
func (tx *Transaction) Abort(ctx context.Context) error {
	p := tx.p
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.fenced:
		tx.ended, p.open = true, nil
		return ErrProducerFenced
	case tx.ended:
		return fmt.Errorf("%w: the transaction has ended", ErrInvalidTxnState)
	}
	clear(tx.pending)
	if tx.begun {
		if err := p.end(ctx, false); err != nil {
			if err = p.failed(err); errors.Is(err, ErrProducerFenced) {
				tx.ended, p.open = true, nil
				return err
			}
			// A new epoch aborts what the id left open.
			if ierr := p.init(ctx); ierr != nil {
				p.reinit = true
				return p.failed(fmt.Errorf("abort transaction of %q: %w (then: %w)", p.id, err, ierr))
			}
		}
	}
	tx.ended, p.open = true, nil
	return nil
}

// SendOffsets sends group's offsets (the next offset to consume of each
// partition) to the transaction: they are committed if and only if it
// commits. Authorized as Kafka's: READ on the group and on each topic.
func (tx *Transaction) SendOffsets(ctx context.Context, group string, offsets []CommittedOffset) error {
	return tx.sendOffsets(ctx, group, "", nil, offsets)
}

// SendGroupOffsets is SendOffsets for g's group as g's member in its
// current generation (KIP-447): refused when the group moved on without
// it (a rebalance), so a consumer that lost its partitions cannot commit
// them.
func (tx *Transaction) SendGroupOffsets(ctx context.Context, g *GroupConsumer, offsets []CommittedOffset) error {
	member, gen := g.Member()
	return tx.sendOffsets(ctx, g.opts.Group, member, &gen, offsets)
}

func (tx *Transaction) sendOffsets(ctx context.Context, group, member string, gen *int32, offsets []CommittedOffset) error {
	p := tx.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := tx.check(); err != nil {
		return err
	}
	if group == "" {
		return fmt.Errorf("%w: empty group", ErrInvalidArgument)
	}
	req := &logdv1.TxnSendOffsetsRequest{Producer: p.producer(), Group: group, MemberId: member, Generation: gen}
	for _, o := range offsets {
		req.Offsets = append(req.Offsets, &logdv1.TxnOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata})
	}
	// The group may be added even when the offsets are then refused: the
	// coordinator knows the transaction from here on.
	tx.begun = true
	err := p.coordinator(ctx, func(ctx context.Context, tc logdv1.TransactionsClient) error {
		_, err := tc.SendOffsets(ctx, req)
		return err
	})
	if err != nil {
		tx.err = p.failed(fmt.Errorf("send offsets of group %q to the transaction of %q: %w", group, p.id, err))
		return tx.err
	}
	return nil
}

// end ends the transaction at the coordinator.
func (p *TransactionalProducer) end(ctx context.Context, commit bool) error {
	return p.coordinator(ctx, func(ctx context.Context, tc logdv1.TransactionsClient) error {
		_, err := tc.End(ctx, &logdv1.TxnEndRequest{Producer: p.producer(), Commit: commit})
		return err
	})
}

// takePending removes the batches not yet sent.
func (tx *Transaction) takePending() ([]topicPartition, []*txnBatch) {
	var tps []topicPartition
	var bs []*txnBatch
	for tp, b := range tx.pending {
		tps = append(tps, tp)
		bs = append(bs, b)
	}
	clear(tx.pending)
	return tps, bs
}

// send adds the partitions not yet in the transaction to it, then writes
// each batch to its partition's leader, the partitions at once. A failure
// fails the transaction (p.mu held).
func (tx *Transaction) send(ctx context.Context, tps []topicPartition, bs []*txnBatch) error {
	p := tx.p
	var add []topicPartition
	for _, tp := range tps {
		if !tx.added[tp] {
			add = append(add, tp)
		}
	}
	if len(add) > 0 {
		if err := p.addPartitions(ctx, add); err != nil {
			tx.err = p.failed(fmt.Errorf("add partitions to the transaction of %q: %w", p.id, err))
			return tx.err
		}
		tx.begun = true
		for _, tp := range add {
			tx.added[tp] = true
		}
	}
	type result struct {
		addr string
		err  error
	}
	res := make([]result, len(tps))
	var wg sync.WaitGroup
	for i := range tps {
		seq, leader := p.seqs[tps[i]], p.leaders[tps[i]]
		wg.Go(func() { res[i].addr, res[i].err = p.write(ctx, tps[i], leader, seq, bs[i]) })
	}
	wg.Wait()
	var first error
	for i, r := range res {
		p.leaders[tps[i]] = r.addr
		if r.err == nil {
			p.seqs[tps[i]] += int32(len(bs[i].recs))
			continue
		}
		// The batch may be in the log: the partition's sequence is
		// unknown until a new epoch restarts them.
		p.reinit = true
		if first == nil || errors.Is(r.err, ErrProducerFenced) {
			first = r.err
		}
	}
	if first != nil {
		tx.err = p.failed(first)
	}
	return first
}

// write sends b to tp's leader (at addr, "" for a seed) as one
// transactional batch at sequence seq, retrying what may be retried (the
// same bytes: the partition stores them once) until DeliveryTimeout. An
// out-of-order answer may mean a newer epoch fenced the producer, which
// the coordinator then says. It returns where the leader answered.
func (p *TransactionalProducer) write(ctx context.Context, tp topicPartition, addr string, seq int32, b *txnBatch) (string, error) {
	enc := batch.EncodeTransactional(nil, batch.Producer{ID: p.pid, Epoch: p.epoch, Sequence: seq}, b.recs)
	part := tp.partition
	req := &logdv1.ProduceRequest{Topic: tp.topic, Partition: &part, Batch: enc, Acks: logdv1.Acks(p.opts.Acks), TransactionalId: p.id}
	deadline := time.Now().Add(p.opts.DeliveryTimeout)
	backoff := p.opts.RetryBackoff
	for {
		actx, cancel := context.WithTimeout(ctx, min(p.opts.RequestTimeout, max(time.Until(deadline), time.Millisecond)))
		answered, err := p.c.call(actx, addr, func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := logdv1.NewLogClient(cc).Produce(ctx, req)
			return err
		})
		cancel()
		if err == nil {
			return answered, nil
		}
		addr = answered
		if retryable(err) && leaderOf(err) == "" {
			addr = "" // the node may be gone: a seed names the leader
		}
		if status.Code(err) == codes.FailedPrecondition {
			if ferr := p.addPartitions(ctx, []topicPartition{tp}); errors.Is(ferr, ErrProducerFenced) {
				return addr, ferr
			}
		}
		if !retryable(err) || time.Now().Add(backoff).After(deadline) || ctx.Err() != nil {
			return addr, fmt.Errorf("produce to %s/%d in the transaction of %q: %w", tp.topic, tp.partition, p.id, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// Flush sends the transaction's records not yet sent: they are then in
// their partitions, invisible to read_committed readers until the
// transaction commits (and holding those readers at the partitions' last
// stable offset until it ends).
func (tx *Transaction) Flush(ctx context.Context) error {
	p := tx.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := tx.check(); err != nil {
		return err
	}
	if tps, bs := tx.takePending(); len(tps) > 0 {
		return tx.send(ctx, tps, bs)
	}
	return nil
}
