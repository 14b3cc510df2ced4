package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/logd/logd/client"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TxnConfig configures the transactional workload: Kafka producers with
// a transactional id each write one record to each of a few partitions of
// Topic per transaction and commit or abort at random; now and then one
// abandons its transaction (a crash) or a second instance of its
// transactional id fences it. A read_committed reader follows every
// partition. CheckTxn judges the history.
type TxnConfig struct {
	Topic      string // default "torture-txn"
	Partitions int32  // default 3
	Producers  int    // default 2
	// Rate is each producer's transactions a second (default 5).
	Rate int
	// LogDir receives each client's franz-go log at Info level, a file
	// per client instance (txn_log.go); empty: the clients do not log.
	LogDir string
}

func (c *TxnConfig) setDefaults() {
	if c.Topic == "" {
		c.Topic = "torture-txn"
	}
	if c.Partitions <= 0 {
		c.Partitions = 3
	}
	if c.Producers <= 0 {
		c.Producers = 2
	}
	if c.Rate <= 0 {
		c.Rate = 5
	}
}

// txnTimeout is the producers' transaction timeout: an abandoned
// transaction is aborted by the coordinator after it.
const txnTimeout = 10 * time.Second

// TxnWorkload drives the transactional producers and the reader beside a
// main Workload, whose cluster, seed and clock it shares.
type TxnWorkload struct {
	cfg  TxnConfig
	w    *Workload
	logs *txnLogs
	mu   sync.Mutex
	h    TxnHistory
	wg   sync.WaitGroup
}

// NewTxnWorkload returns the transactional workload beside w.
func NewTxnWorkload(w *Workload, cfg TxnConfig) *TxnWorkload {
	cfg.setDefaults()
	return &TxnWorkload{cfg: cfg, w: w, logs: &txnLogs{dir: cfg.LogDir}}
}

// Setup creates the topic, retrying until a node answers.
func (tw *TxnWorkload) Setup(ctx context.Context) error {
	if len(tw.w.kafkaAddrs(0)) == 0 {
		return errors.New("torture: the transactional workload needs a cluster that serves Kafka")
	}
	return tw.w.createTopic(ctx, tw.cfg.Topic, client.TopicOptions{Partitions: tw.cfg.Partitions})
}

// Run starts the producers and the reader and returns at once.
func (tw *TxnWorkload) Run(ctx context.Context) {
	for i := range tw.cfg.Producers {
		tw.wg.Go(func() { tw.produce(ctx, i) })
	}
	tw.wg.Go(func() { tw.readLoop(ctx) })
}

// Wait waits for the clients started by Run.
func (tw *TxnWorkload) Wait() { tw.wg.Wait() }

// History is what the workload recorded.
func (tw *TxnWorkload) History() *TxnHistory {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	h := tw.h
	return &h
}

// newProducer is instance of transactional id txnID's client; with tv1
// held to transaction version 1 (its versions capped below Produce v12,
// EndTxn v5 and TxnOffsetCommit v5), as librdkafka, kafkajs and Sarama
// speak it: it adds its partitions itself and keeps its epoch across
// transactions, and its batches are verified rather than added.
func (tw *TxnWorkload) newProducer(rng *rand.Rand, txnID string, instance int, tv1 bool) (*kgo.Client, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(tw.w.kafkaAddrs(rng.IntN(tw.w.cluster.Size()))...),
		kgo.DefaultProduceTopic(tw.cfg.Topic), kgo.TransactionalID(txnID), kgo.TransactionTimeout(txnTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(15 * time.Second),
		kgo.RetryTimeout(15 * time.Second)}
	if tv1 {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(int16(kmsg.Produce), 11)
		vs.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
		vs.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
		opts = append(opts, kgo.MaxVersions(vs))
	}
	return kgo.NewClient(append(opts, tw.logs.opts(producerLogName(txnID, instance))...)...)
}

// CloseLogs closes the clients' log files (after Wait and FinalRead).
func (tw *TxnWorkload) CloseLogs() error { return tw.logs.close() }

// txnProducer is one instance of a transactional id.
type txnProducer struct {
	cl       *kgo.Client
	instance int
	// fenceAt is when a write of this instance was first acknowledged:
	// its InitProducerID had been answered by then (0 until then).
	fenceAt int64
	// stale: the instance crashed or failed; the next transaction is a
	// new instance's.
	stale bool
}

// produce runs producer id's transactions until ctx ends.
func (tw *TxnWorkload) produce(ctx context.Context, id int) {
	rng := tw.w.rng(7000 + id)
	txnID := fmt.Sprintf("torture-txn-%d", id)
	var old []*txnProducer
	p := &txnProducer{}
	defer func() {
		for _, o := range append(old, p) {
			if o.cl != nil {
				o.cl.Close()
			}
		}
	}()
	tick := time.NewTicker(time.Second / time.Duration(tw.cfg.Rate))
	defer tick.Stop()
	for seq := 0; ctx.Err() == nil; seq++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		if p.cl == nil || p.stale || rng.IntN(20) == 0 {
			cl, err := tw.newProducer(rng, txnID, p.instance+1, id%2 == 1)
			if err != nil {
				tw.w.cfg.Logf("txn producer %d: %v", id, err)
				return
			}
			switch {
			case p.cl != nil && p.fenceAt != 0:
				old = append(old, p) // fenced, kept open: it may still try
			case p.cl != nil:
				// No write of it was acknowledged, so its client may hold
				// no producer id: its next use would ask for a fresh one,
				// which fences the newer instance (Kafka's rule too). It
				// cannot stand for a zombie.
				p.cl.Close()
			}
			p = &txnProducer{cl: cl, instance: p.instance + 1}
		}
		tw.transact(ctx, rng, txnID, p, seq, old)
	}
}

// transact runs one transaction of p; with old instances of the same id
// open it sometimes makes one of them try a write too (a zombie).
func (tw *TxnWorkload) transact(ctx context.Context, rng *rand.Rand, txnID string, p *txnProducer, seq int, old []*txnProducer) {
	t := TxnOp{ID: fmt.Sprintf("%s/%d/%d", txnID, p.instance, seq), TxnID: txnID, Instance: p.instance, Invoke: tw.w.h.Now()}
	if err := p.cl.BeginTransaction(); err != nil {
		return
	}
	n := 1 + rng.IntN(int(tw.cfg.Partitions))
	first := rng.IntN(int(tw.cfg.Partitions))
	t.Writes = make([]TxnWrite, n)
	var wg sync.WaitGroup
	failed := false
	var mu sync.Mutex
	for i := range n {
		part := int32((first + i) % int(tw.cfg.Partitions))
		t.Writes[i] = TxnWrite{Partition: part, Value: fmt.Sprintf("%s/%d", t.ID, part), Invoke: tw.w.h.Now()}
		wg.Add(1)
		p.cl.Produce(ctx, &kgo.Record{Partition: part, Value: []byte(t.Writes[i].Value)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = true
				return
			}
			t.Writes[i].Acked, t.Writes[i].Offset, t.Writes[i].AckTime = true, r.Offset, tw.w.h.Now()
			if p.fenceAt == 0 {
				p.fenceAt = t.Writes[i].AckTime
				tw.record(func(h *TxnHistory) {
					h.Fences = append(h.Fences, TxnFence{TxnID: txnID, Instance: p.instance, Time: p.fenceAt})
				})
			}
		})
	}
	wg.Wait()
	if len(old) > 0 && rng.IntN(4) == 0 {
		z := old[len(old)-1]
		tw.zombie(ctx, txnID, z.instance, z.cl, seq)
	}
	if rng.IntN(15) == 0 { // a crash: the transaction is never ended
		t.Outcome, t.End, t.Complete = OutcomeUnknown, tw.w.h.Now(), tw.w.h.Now()
		tw.record(func(h *TxnHistory) { h.Txns = append(h.Txns, t) })
		p.stale = true
		return
	}
	t.Commit = !failed && rng.IntN(4) != 0
	t.End = tw.w.h.Now()
	end := kgo.TryAbort
	if t.Commit {
		end = kgo.TryCommit
	}
	err := p.cl.EndTransaction(ctx, end)
	t.Complete = tw.w.h.Now()
	switch {
	case err == nil:
		t.Outcome = OutcomeOK
	case errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch):
		t.Outcome = OutcomeFail
	default:
		t.Outcome = OutcomeUnknown
	}
	tw.record(func(h *TxnHistory) { h.Txns = append(h.Txns, t) })
	if err != nil {
		p.stale = true // a new instance next time; this one may be unusable
	}
}

// zombie has a fenced instance try a transaction with one write and a
// commit: neither may be acknowledged.
func (tw *TxnWorkload) zombie(ctx context.Context, txnID string, instance int, cl *kgo.Client, seq int) {
	t := TxnOp{ID: fmt.Sprintf("%s/%d/z%d", txnID, instance, seq), TxnID: txnID, Instance: instance, Invoke: tw.w.h.Now(), Commit: true}
	if err := cl.BeginTransaction(); err != nil {
		return
	}
	w := TxnWrite{Partition: 0, Value: t.ID + "/0", Invoke: tw.w.h.Now()}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	r, err := cl.ProduceSync(pctx, &kgo.Record{Partition: 0, Value: []byte(w.Value)}).First()
	cancel()
	if err == nil {
		w.Acked, w.Offset, w.AckTime = true, r.Offset, tw.w.h.Now()
	}
	t.Writes = []TxnWrite{w}
	t.End = tw.w.h.Now()
	err = cl.EndTransaction(ctx, kgo.TryCommit)
	// franz-go ends a transaction that added no partition without asking
	// the coordinator: its nil says nothing then.
	t.Complete, t.Outcome = tw.w.h.Now(), OutcomeUnknown
	if err == nil && w.Acked {
		t.Outcome = OutcomeOK
	}
	tw.record(func(h *TxnHistory) { h.Txns = append(h.Txns, t) })
}

func (tw *TxnWorkload) record(f func(*TxnHistory)) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	f(&tw.h)
}
