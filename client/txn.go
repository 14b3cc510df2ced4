package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/logd/logd/internal/batch"
	logdv1 "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/routing"
)

// Errors of transactional producers (docs/transactions.md).
var (
	// ErrProducerFenced: a newer producer with the same transactional id
	// started (NewTransactionalProducer), or the coordinator aborted the
	// transaction at its timeout, which fences the producer too. It is
	// final: none of this producer's transactions can commit any more;
	// close it (a new one with the id can go on).
	ErrProducerFenced = errors.New("client: transactional producer fenced (a newer producer with the same transactional id, or the transaction's timeout)")
	// ErrInvalidTxnState: the call does not fit the transaction's state
	// (a Begin while one is open, a call on an ended transaction, a
	// commit of a transaction a write of which failed: abort it).
	ErrInvalidTxnState = errors.New("client: invalid transaction state")
)

// Defaults of TransactionalOptions.
const (
	// DefaultTxnTimeout is how long a transaction may stay open before the
	// coordinator aborts it (Kafka's transaction.timeout.ms default).
	DefaultTxnTimeout = time.Minute
)

// TransactionalOptions configure a TransactionalProducer. Zero values
// take the defaults.
type TransactionalOptions struct {
	// Timeout bounds how long a transaction stays open: the coordinator
	// aborts one older (and fences its producer), so a producer that dies
	// mid-transaction holds read_committed readers at most this long.
	// At most 15 minutes; 0: DefaultTxnTimeout.
	Timeout time.Duration
	// Acks says when a batch counts as written (AcksDefault: the
	// server's default, all in a cluster).
	Acks Acks
	// MaxBatchBytes bounds one encoded batch: a partition's records are
	// sent when the next would overflow it, and at Commit.
	MaxBatchBytes int
	// RequestTimeout bounds one produce attempt; DeliveryTimeout a
	// batch's attempts together.
	RequestTimeout  time.Duration
	DeliveryTimeout time.Duration
	// RetryBackoff is the first wait before a produce is tried again; it
	// doubles up to 2s.
	RetryBackoff time.Duration
}

func (o *TransactionalOptions) setDefaults() {
	po := ProducerOptions{MaxBatchBytes: o.MaxBatchBytes, RequestTimeout: o.RequestTimeout,
		DeliveryTimeout: o.DeliveryTimeout, RetryBackoff: o.RetryBackoff}
	po.setDefaults()
	o.MaxBatchBytes, o.RequestTimeout, o.DeliveryTimeout, o.RetryBackoff = po.MaxBatchBytes, po.RequestTimeout, po.DeliveryTimeout, po.RetryBackoff
	if o.Timeout <= 0 {
		o.Timeout = DefaultTxnTimeout
	}
}

// TransactionalProducer writes records in transactions (Kafka's
// transactional producer, over logd's gRPC API): the records of a
// Transaction, in any partitions of any topics, and the consumer offsets
// sent with it become visible to read_committed readers together when it
// commits, and never when it aborts. One transaction is open at a time.
// The producer's id (transactional id) outlives it: a new producer with
// the same id fences this one (ErrProducerFenced) and aborts what it left
// open. Its batches are Kafka's (producer id, epoch, sequence, the
// transactional bit), so Kafka clients reading the same partitions see
// the same transactions. Safe for concurrent use; calls are serialized.
type TransactionalProducer struct {
	c    *Client
	id   string
	opts TransactionalOptions

	mu      sync.Mutex
	pid     int64
	epoch   int16
	seqs    map[topicPartition]int32  // the next sequence of each partition, this epoch
	leaders map[topicPartition]string // where each partition's leader answered last
	open    *Transaction
	fenced  bool
	closed  bool
	// reinit: a write of the producer's ended unknown (it may be in the
	// log), so its sequences are unknown: a new epoch restarts them.
	reinit bool
}

// NewTransactionalProducer starts the producer of transactional id id:
// its producer id and a new epoch from the coordinator, which fences the
// id's previous producer and aborts a transaction it left open.
func (c *Client) NewTransactionalProducer(ctx context.Context, id string, opts TransactionalOptions) (*TransactionalProducer, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty transactional id", ErrInvalidArgument)
	}
	opts.setDefaults()
	p := &TransactionalProducer{c: c, id: id, opts: opts, leaders: map[topicPartition]string{}}
	if err := p.init(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// init takes a new epoch (p.mu held, or p not shared yet).
func (p *TransactionalProducer) init(ctx context.Context) error {
	var resp *logdv1.TxnInitResponse
	err := p.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewTransactionsClient(cc).InitProducer(ctx, &logdv1.TxnInitRequest{
			TransactionalId: p.id, TimeoutMs: p.opts.Timeout.Milliseconds()})
		return err
	})
	if err != nil {
		return fmt.Errorf("init transactional producer %q: %w", p.id, err)
	}
	p.pid, p.epoch = resp.GetProducerId(), int16(resp.GetEpoch())
	p.seqs, p.reinit = map[topicPartition]int32{}, false
	return nil
}

// nearWrap: a partition's sequence nears the int32 limit, which a new
// epoch (sequences from 0) keeps it from reaching (p.mu held).
func (p *TransactionalProducer) nearWrap() bool {
	for _, seq := range p.seqs {
		if seq > math.MaxInt32-1<<24 {
			return true
		}
	}
	return false
}

// ID is the producer's transactional id.
func (p *TransactionalProducer) ID() string { return p.id }

// Begin opens a transaction. One is open at a time: Begin fails with
// ErrInvalidTxnState until the previous one is committed or aborted.
func (p *TransactionalProducer) Begin(ctx context.Context) (*Transaction, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, ErrClosed
	case p.fenced:
		return nil, ErrProducerFenced
	case p.open != nil:
		return nil, fmt.Errorf("%w: a transaction is open: commit or abort it first", ErrInvalidTxnState)
	case p.reinit || p.nearWrap():
		if err := p.init(ctx); err != nil {
			return nil, p.failed(err)
		}
	}
	p.open = &Transaction{p: p, added: map[topicPartition]bool{}, pending: map[topicPartition]*txnBatch{}, sticky: map[string]int32{}}
	return p.open, nil
}

// Close ends the producer: a transaction still open is aborted (when
// ctx allows; otherwise the coordinator aborts it at its timeout).
func (p *TransactionalProducer) Close(ctx context.Context) error {
	p.mu.Lock()
	tx := p.open
	p.mu.Unlock()
	var err error
	if tx != nil {
		err = tx.Abort(ctx)
		if errors.Is(err, ErrProducerFenced) {
			err = nil // nothing of it can commit
		}
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return err
}

// failed notes what err says of the producer and returns it (p.mu held).
func (p *TransactionalProducer) failed(err error) error {
	if errors.Is(err, ErrProducerFenced) {
		p.fenced = true
	}
	return err
}

// producer is the request's TxnProducer.
func (p *TransactionalProducer) producer() *logdv1.TxnProducer {
	return &logdv1.TxnProducer{TransactionalId: p.id, ProducerId: p.pid, Epoch: int32(p.epoch)}
}

// coordinator runs fn against the coordinator (any node passes the call
// on to it), retried while the cluster cannot answer.
func (p *TransactionalProducer) coordinator(ctx context.Context, fn func(ctx context.Context, tc logdv1.TransactionsClient) error) error {
	return p.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) error {
		return fn(ctx, logdv1.NewTransactionsClient(cc))
	})
}

// addPartitions adds tps to the transaction at the coordinator.
func (p *TransactionalProducer) addPartitions(ctx context.Context, tps []topicPartition) error {
	req := &logdv1.TxnAddPartitionsRequest{Producer: p.producer()}
	for _, tp := range tps {
		req.Partitions = append(req.Partitions, &logdv1.TxnPartition{Topic: tp.topic, Partition: tp.partition})
	}
	return p.coordinator(ctx, func(ctx context.Context, tc logdv1.TransactionsClient) error {
		_, err := tc.AddPartitions(ctx, req)
		return err
	})
}

// Transaction is one transaction of a TransactionalProducer, from Begin
// to Commit or Abort. Its records are sent in batches per partition: when
// a partition's next record would overflow MaxBatchBytes, and at Commit.
type Transaction struct {
	p *TransactionalProducer

	// Guarded by p.mu.
	added   map[topicPartition]bool // at the coordinator
	pending map[topicPartition]*txnBatch
	sticky  map[string]int32 // the partition of a topic's unkeyed records
	begun   bool             // the coordinator knows the transaction
	err     error            // a write failed: only Abort is left
	ended   bool
}

// txnBatch is a partition's records not yet sent.
type txnBatch struct {
	recs []batch.Record
	size int
}

// check is the error of a call on tx that is no longer allowed (p.mu held).
func (tx *Transaction) check() error {
	switch {
	case tx.p.fenced:
		return ErrProducerFenced
	case tx.ended:
		return fmt.Errorf("%w: the transaction has ended", ErrInvalidTxnState)
	case tx.err != nil:
		return fmt.Errorf("%w: a write of the transaction failed, abort it: %w", ErrInvalidTxnState, tx.err)
	}
	return nil
}

// Produce adds rec to the transaction. The record is routed as a
// Producer routes it (its Partition, its key, or one partition per topic
// for the transaction's unkeyed records), and sent with the partition's
// next batch: errors of that send come back from this call or from
// Commit, after which the transaction can only be aborted.
func (tx *Transaction) Produce(ctx context.Context, rec Record) error {
	p := tx.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := tx.check(); err != nil {
		return err
	}
	tp, size, err := tx.route(ctx, &rec)
	if err != nil {
		return err
	}
	b := tx.pending[tp]
	if b != nil && batch.HeaderSize+b.size+size > p.opts.MaxBatchBytes {
		delete(tx.pending, tp)
		if err := tx.send(ctx, []topicPartition{tp}, []*txnBatch{b}); err != nil {
			return err
		}
		b = nil
	}
	if b == nil {
		b = &txnBatch{}
		tx.pending[tp] = b
	}
	br := batch.Record{Timestamp: rec.Timestamp.UnixMilli(), Key: rec.Key, Value: rec.Value}
	for _, h := range rec.Headers {
		br.Headers = append(br.Headers, batch.Header{Key: h.Key, Value: h.Value})
	}
	b.recs = append(b.recs, br)
	b.size += size
	return nil
}

// route is rec's partition and encoded size; rec's timestamp is set.
func (tx *Transaction) route(ctx context.Context, rec *Record) (topicPartition, int, error) {
	p := tx.p
	if rec.Topic == "" {
		return topicPartition{}, 0, fmt.Errorf("%w: no topic", ErrInvalidRecord)
	}
	size := recordSize(rec)
	if batch.HeaderSize+size > p.opts.MaxBatchBytes {
		return topicPartition{}, 0, fmt.Errorf("%w: %d bytes of key, value and headers; a batch holds at most %d",
			ErrRecordTooLarge, size, p.opts.MaxBatchBytes-batch.HeaderSize)
	}
	n, err := p.c.topics.partitions(ctx, rec.Topic)
	if err == nil && rec.Partition != nil && *rec.Partition >= n {
		p.c.topics.forget(rec.Topic) // partitions may have been added
		n, err = p.c.topics.partitions(ctx, rec.Topic)
	}
	if err != nil {
		return topicPartition{}, 0, err
	}
	var part int32
	switch {
	case rec.Partition != nil:
		part = *rec.Partition
		if part < 0 || part >= n {
			return topicPartition{}, 0, fmt.Errorf("%w: topic %q has partitions 0 to %d, not %d", ErrInvalidRecord, rec.Topic, n-1, part)
		}
	case rec.Key != nil:
		part = routing.ForKey(rec.Key, int(n))
	default:
		s, ok := tx.sticky[rec.Topic]
		if !ok || s >= n {
			s = rand.Int32N(n)
			tx.sticky[rec.Topic] = s
		}
		part = s
	}
	if rec.Timestamp.IsZero() {
		rec.Timestamp = time.Now()
	}
	return topicPartition{rec.Topic, part}, size, nil
}
