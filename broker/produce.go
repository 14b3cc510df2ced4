package broker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
)

// Acks is how durable a produce is before it is answered.
type Acks int

const (
	// AcksAll answers once a quorum of the partition's replicas has the
	// batch (on a single node: once it is durable). The default.
	AcksAll Acks = iota
	// AcksLeader answers once the leader's own append is durable.
	AcksLeader
)

// ProduceRequest is one batch for one partition.
type ProduceRequest struct {
	Principal Principal
	Topic     string
	Partition int32
	// Batch is one Kafka v2 record batch as stored: producer id, epoch
	// and base sequence in its header (batch.NoProducer without).
	Batch []byte
	Acks  Acks
	// TransactionalID is the producer's transactional id when Batch is
	// in a transaction (Kafka's produce names it): the first batch of a
	// transaction in a partition is verified with the coordinator
	// (txn_verify.go).
	TransactionalID string
	// AddToTxn: the batch's producer speaks transaction version 2
	// (KIP-890 part 2, Kafka's produce v12 and later) and adds no
	// partition itself; the first batch of its transaction here adds the
	// partition to it.
	AddToTxn bool
}

// ProduceResult is where a batch was stored.
type ProduceResult struct {
	BaseOffset, LastOffset int64
	LogStart               int64
	AppendTimeMs           int64 // -1: the batch's CreateTime stands
	Duplicate              bool  // a retry answered with the original offsets
}

// How long Produce waits for a sleeping partition: for room to wake it
// (deferWait, asking again after deferRetry, then twice as long each time
// up to deferRetryMax: in a burst, hundreds of requests wait for room at
// once, and each ask costs a whole StartProduce) and for the election it
// started (wokeWait). A client's request waiting for room holds one of its
// in-flight slots, where the retry of a group woken already may queue
// behind it: so the wait for room is short, and the client's retry
// comes back for the rest.
const (
	deferWait     = 500 * time.Millisecond
	deferRetry    = 20 * time.Millisecond
	deferRetryMax = 100 * time.Millisecond
	wokeWait      = 2 * time.Second
)

// Produce appends a batch and answers once it is durable per r.Acks. A
// produce to a sleeping partition waits until the node may wake it
// (cluster.NotLeaderError.Deferred) and for the election it started
// (Woke), instead of answering "retry" at once: it names one partition,
// so no other partition's request waits behind it (StartProduce, for
// front-ends that pipeline many partitions on one connection, answers at
// once). On a busy cluster a client's retry comes seconds later, keeping
// the group it had woken awake for nothing, and a burst of retries
// refused by the wake bound costs the nodes more than the wakes.
func (b *Broker) Produce(ctx context.Context, r ProduceRequest) (ProduceResult, error) {
	f, err := b.startWaking(ctx, r)
	if err != nil {
		return ProduceResult{}, err
	}
	return f.Wait()
}

// startWaking is StartProduce, waiting for r's sleeping partition to wake
// (Produce).
func (b *Broker) startWaking(ctx context.Context, r ProduceRequest) (ProduceFuture, error) {
	deferUntil := time.Now().Add(deferWait)
	retry := deferRetry
	for {
		f, err := b.StartProduce(ctx, r)
		nl := (*cluster.NotLeaderError)(nil)
		if !errors.As(err, &nl) || !(nl.Woke || nl.Deferred && time.Now().Before(deferUntil)) {
			return f, err
		}
		p, perr := b.producePartition(ctx, r)
		if perr != nil {
			return nil, err
		}
		if nl.Woke {
			b.plane.awaitLeader(ctx, p, wokeWait)
			return b.StartProduce(ctx, r) // led here, a leader named, or none yet
		}
		t := time.NewTimer(min(retry, time.Until(deferUntil)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
		retry = min(2*retry, deferRetryMax)
	}
}

// ProduceFuture is a produce under way (StartProduce), as hashicorp/raft's
// futures are a Raft operation under way: its batch was checked and
// started, in order with the partition's earlier writes, and Wait answers
// it.
type ProduceFuture interface {
	// Wait blocks until the batch is answered per its acks (or the
	// request's context ends) and returns where it was stored. It may be
	// called more than once, from any goroutine: every call returns the
	// same answer.
	Wait() (ProduceResult, error)
}

// startProduce is StartProduce (wake.go) without the wait for a
// sleeping partition's wake: it checks r and starts its write, in order
// with the partition's earlier writes. The request counts as under way
// (Close waits for it) until the future's Wait returned, which every
// caller must call.
func (b *Broker) startProduce(ctx context.Context, r ProduceRequest) (ProduceFuture, error) {
	start := time.Now()
	if err := b.Authorize(ctx, r.Principal, auth.OpWrite, auth.Topic(r.Topic)); err != nil {
		return nil, err
	}
	if err := b.enter(); err != nil {
		return nil, err
	}
	p, cfg, err := b.producePartitionOf(ctx, r)
	var f *produceFuture
	if err == nil {
		f, err = b.startAppend(ctx, p, cfg, r)
	}
	if err != nil {
		b.leave()
		return nil, err
	}
	f.start = start
	return f, nil
}

// produceFuture is the ProduceFuture of a batch started on a partition.
type produceFuture struct {
	b     *Broker
	ctx   context.Context
	p     *partition.Partition
	info  batch.Info
	size  int
	start time.Time
	// appendMs is the LogAppendTime stamped in the batch; -1: none.
	appendMs int64
	// a is the append under way, nil when it could not start (err).
	a   *partition.Appending
	err error
	// raftErr, when set, maps the append's error (the replicated path).
	raftErr func(error) error

	once sync.Once
	res  ProduceResult
}

func (f *produceFuture) Wait() (ProduceResult, error) {
	f.once.Do(f.wait)
	return f.res, f.err
}

// wait answers the produce, once, and ends the request (leave).
func (f *produceFuture) wait() {
	defer f.b.leave()
	var res partition.AppendResult
	err := f.err
	if f.a != nil {
		res, err = f.a.Wait(f.ctx)
		if f.raftErr != nil {
			err = f.raftErr(err)
		}
	}
	f.res, f.err = f.b.appended(f.p, f.size, f.info, res, err)
	if f.err == nil && !f.res.Duplicate {
		f.res.AppendTimeMs = f.appendMs
	}
	if f.err == nil {
		f.b.m.produceLatency.Observe(time.Since(f.start).Seconds())
	}
}

// producePartition finds the partition a produce goes to, and refuses it
// when the disk is full.
func (b *Broker) producePartition(ctx context.Context, r ProduceRequest) (*partition.Partition, error) {
	p, _, err := b.producePartitionOf(ctx, r)
	return p, err
}

// producePartitionOf is producePartition, with the topic's config.
func (b *Broker) producePartitionOf(ctx context.Context, r ProduceRequest) (*partition.Partition, partition.TopicConfig, error) {
	// A request its client already gave up on is not applied (a cancelled
	// request that is already being appended still may be).
	if err := ctx.Err(); err != nil {
		return nil, partition.TopicConfig{}, err
	}
	cfg, parts, err := b.topics.Partitions(r.Topic)
	if err != nil {
		return nil, cfg, b.topicLookup(ctx, r.Topic, err)
	}
	if err := b.disk.checkAppend(); err != nil {
		return nil, cfg, err
	}
	if r.Partition < 0 || int(r.Partition) >= len(parts) {
		return nil, cfg, partitionRange(r.Topic, cfg.Partitions, r.Partition)
	}
	return parts[r.Partition], cfg, nil
}

// partitionRange is the error of a partition id a topic does not have.
func partitionRange(topic string, n, id int32) error {
	return kind.Errorf(ErrUnknownPartition, "topic %q has partitions 0 to %d, not %d", topic, n-1, id)
}

// PartitionCount is a topic's partition count.
func (b *Broker) PartitionCount(ctx context.Context, p Principal, topic string) (int32, error) {
	if err := b.Authorize(ctx, p, auth.OpDescribe, auth.Topic(topic)); err != nil {
		return 0, err
	}
	c, err := b.topics.Config(topic)
	if err != nil {
		return 0, b.topicLookup(ctx, topic, err)
	}
	return c.Partitions, nil
}

// CheckBatch checks a batch as produce does: its size, then that it is
// one whole, well-formed v2 batch with a valid CRC, whose records (once
// decompressed, if compressed) are well-formed. It is the one check of a
// produced batch on this node: what it returns goes down to the log (or
// through Raft) as it is, never checked again.
func (b *Broker) CheckBatch(data []byte) (batch.Checked, error) {
	if len(data) > b.cfg.MaxBatchBytes {
		return batch.Checked{}, kind.Errorf(ErrBatchTooLarge,
			"produce: batch of %d bytes is over the %d-byte limit: send smaller batches", len(data), b.cfg.MaxBatchBytes)
	}
	c, err := batch.Validate(data)
	switch {
	case errors.Is(err, batch.ErrUnsupported):
		return c, kind.Errorf(ErrInvalidBatch, "produce: %v", err)
	case err != nil:
		return c, kind.Errorf(ErrInvalidBatch, "produce: malformed record batch (%v): send exactly one Kafka v2 record batch (magic 2, CRC-32C, records with offset deltas 0, 1, 2...)", err)
	}
	return c, nil
}

// checkKeyed refuses a batch holding a record without a key: a compacted
// topic keeps records by key (Kafka answers INVALID_RECORD too).
func checkKeyed(c batch.Checked, topic string) error {
	_, recs, err := batch.Decode(c.Bytes(), 0)
	if err != nil {
		return kind.Errorf(ErrInvalidBatch, "produce: %v", err)
	}
	for i, r := range recs {
		if r.Key == nil {
			return kind.Errorf(ErrInvalidBatch, "produce: record %d of %d has no key: topic %q is compacted (cleanup.policy=compact), it keeps the newest record of each key: give every record a key", i, len(recs), topic)
		}
	}
	return nil
}

// MaxBatchBytes is the largest batch a produce accepts.
func (b *Broker) MaxBatchBytes() int { return b.cfg.MaxBatchBytes }

// checkTopicBatch checks a batch against its topic's config: every record
// keyed for a compacted topic, the size under max.message.bytes; for a
// LogAppendTime topic it stamps the node's clock in the batch (appendMs,
// -1 when the producer's CreateTime stands).
func checkTopicBatch(c batch.Checked, topic string, cfg partition.TopicConfig) (_ batch.Checked, appendMs int64, err error) {
	pc := cfg.Produces()
	if pc.MaxMessageBytes > 0 && int64(len(c.Bytes())) > pc.MaxMessageBytes {
		return c, -1, kind.Errorf(ErrBatchTooLarge,
			"produce: batch of %d bytes is over topic %q's max.message.bytes of %d: send smaller batches", len(c.Bytes()), topic, pc.MaxMessageBytes)
	}
	if cfg.Cleanups().Compacted() {
		if err := checkKeyed(c, topic); err != nil {
			return c, -1, err
		}
	}
	if !pc.LogAppendTime() {
		return c, -1, nil
	}
	now := time.Now().UnixMilli()
	return batch.StampLogAppendTime(c, now), now, nil
}

// checkInSync refuses an acks=all produce while fewer of the partition's
// replicas than its topic's min.insync.replicas are in sync.
func checkInSync(p *partition.Partition, cfg partition.TopicConfig, acks Acks, inSync func() int) error {
	want := cfg.Produces().MinInsyncReplicas
	if acks != AcksAll || want <= 1 {
		return nil
	}
	if n := inSync(); n < int(want) {
		return kind.Errorf(ErrNotEnoughReplicas, "produce: %d of partition %s/%d's replicas are in sync, topic's min.insync.replicas is %d: retry once replicas are back, or produce with acks=1",
			n, p.Topic, p.ID, want)
	}
	return nil
}

// startAppend checks a batch (CheckBatch, then against its topic's
// config) and starts its append: to the log on a single node, through the
// partition's Raft group in a cluster.
func (b *Broker) startAppend(ctx context.Context, p *partition.Partition, cfg partition.TopicConfig, r ProduceRequest) (*produceFuture, error) {
	c, err := b.CheckBatch(r.Batch)
	if err != nil {
		return nil, err
	}
	c, appendMs, err := checkTopicBatch(c, p.Topic, cfg)
	if err != nil {
		return nil, err
	}
	// A transactional batch goes on its producer's transaction open in
	// p; the partition refuses it when there is none (TxnNotOpen), and
	// it is then verified as its transaction's first and started again.
	txn := int32(0)
	if verifiable(c.Info(), r.TransactionalID) {
		txn = partition.TxnContinues
	}
	f, err := b.startChecked(ctx, p, cfg, c, r.Acks, appendMs, txn)
	if !partition.TxnNotOpen(err) {
		return f, err
	}
	if txn, err = b.verifyTxn(ctx, p, c.Info(), r.TransactionalID, r.AddToTxn); err != nil {
		return nil, err
	}
	return b.startChecked(ctx, p, cfg, c, r.Acks, appendMs, txn)
}

// startChecked starts the append of a checked batch (startAppend's, or a
// transaction marker the broker made: txn_markers.go) to partition p of a
// topic configured cfg; appendMs is the LogAppendTime stamped in it (-1:
// none); txn, when above 0, the number of the transaction the coordinator
// verified the batch as the first of, or partition.TxnContinues
// (txn_verify.go).
func (b *Broker) startChecked(ctx context.Context, p *partition.Partition, cfg partition.TopicConfig, c batch.Checked, acks Acks, appendMs int64, txn int32) (*produceFuture, error) {
	f := &produceFuture{b: b, ctx: ctx, p: p, info: c.Info(), size: len(c.Bytes()), appendMs: appendMs}
	rp, clustered := b.plane.(*raftPlane)
	if !clustered {
		if err := checkInSync(p, cfg, acks, func() int { return 1 }); err != nil {
			return nil, err
		}
		// Written in order now; the wait joins the fsync, which the
		// producer's next batches, started meanwhile, share.
		f.a, f.err = p.StartTxnAppend(c, txn)
		if partition.TxnNotOpen(f.err) {
			return nil, f.err // nothing started: verified, and started again
		}
		f.err = txnEndedError(f.err)
		return f, nil
	}
	r, err := rp.cl.Replica(ctx, p)
	if err != nil {
		return nil, err
	}
	// The producer's next batches may start while this one waits:
	// they pipeline through Raft (see partition.StartAppendVia).
	lead, err := r.Leading(ctx)
	if err != nil {
		return nil, rp.cl.RaftError(err)
	}
	if err := checkInSync(p, cfg, acks, func() int { return rp.cl.InSyncReplicas(p) }); err != nil {
		return nil, err
	}
	f.a, err = p.StartTxnAppendVia(c, lead, txn, func(c batch.Checked, after partition.Write) (partition.Write, error) {
		prev, _ := after.(*replication.Write)
		w, err := r.Start(c, acks == AcksLeader, prev)
		if err != nil {
			return nil, err // not w: a nil *Write in a Write is not nil
		}
		return w, nil
	})
	if err != nil {
		switch {
		case partition.TxnEnded(err):
			return nil, txnEndedError(err)
		case partition.TxnNotOpen(err):
			return nil, err
		}
		return nil, rp.cl.RaftError(err)
	}
	f.raftErr = rp.cl.RaftError
	return f, nil
}

// appended answers an append and counts it.
func (b *Broker) appended(p *partition.Partition, size int, info batch.Info, res partition.AppendResult, err error) (ProduceResult, error) {
	if errors.Is(err, log.ErrClosed) {
		if live := b.stillServed(p); live != nil {
			return ProduceResult{}, live // the topic was deleted meanwhile
		}
	}
	if err != nil {
		return ProduceResult{}, err
	}
	if res.Duplicate {
		b.m.produceDupes.WithLabelValues(p.Topic).Inc()
	} else {
		b.m.produceRecords.WithLabelValues(p.Topic).Add(float64(info.NumRecords))
		b.m.produceBytes.WithLabelValues(p.Topic).Add(float64(size))
	}
	return ProduceResult{BaseOffset: res.BaseOffset, LastOffset: res.LastOffset, LogStart: p.Log.StartOffset(),
		AppendTimeMs: -1, Duplicate: res.Duplicate}, nil
}

// NewProducerID answers Kafka's InitProducerId: a fresh producer id
// (epoch 0), random in 63 bits as the Go client's own, which the dedup
// state knows nothing of.
func (b *Broker) NewProducerID(ctx context.Context) (id int64, epoch int16, err error) {
	var buf [8]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return 0, 0, err
	}
	return int64(binary.BigEndian.Uint64(buf[:]) >> 1), 0, nil
}
