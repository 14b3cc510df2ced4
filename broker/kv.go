package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/kv"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/routing"
)

// The key-value view of a compacted topic (docs/kv.md): the newest record
// of each key, read by key. Package kv keeps the index (key -> offset of
// the newest record, caught up from the log before each answer); this
// file serves it. A key lives in the partition its key routes to
// (routing.ForKey), as every Kafka client puts it.
//
// A get is linearizable unless asked to be stale: on the partition's
// leader, after a read barrier started after the get arrived (as a fetch
// at the high watermark, cluster.Linearizable), so it reflects every put
// acknowledged before it began, through any node. A stale get reads this
// node's replica as it is.
//
// A put is a produce of one record (acks=all), a delete a produce of a
// tombstone. A conditional put (KVPut.Expected) is a compare-and-set: on
// the leader, under the partition's KV lock, the key's latest offset is
// read (current, as a linearizable get) and the record produced only when
// it is the one expected. The lock is taken exclusively by conditional
// puts and shared by plain ones, so no put of the view lands between a
// conditional put's check and its write: of N conditional puts expecting
// the same offset exactly one succeeds. Records produced to the partition
// by other means (a Kafka or gRPC produce) do not take the lock: one of
// the same key may land between the check and the write, and the
// conditional put then overwrites it.
//
// A put may name its writer (KVPut.Writer): a producer id and an epoch
// its client uses for this put alone, with sequence 0. A retry of a put
// that was stored but not answered (its connection dropped) then finds
// the stored batch in the partition's idempotence state and is answered
// with the first attempt's offset instead of storing the value again
// after puts that came in between. The client takes a writer from a pool
// for the whole put, retries included, and moves to the next epoch for
// its next put, so one writer's puts reach each partition in order.

// KVAbsent as KVPut.Expected makes a put conditional on the key having
// no value (never written, or deleted).
const KVAbsent int64 = -1

// Limits of the key-value view.
const (
	// KVListMax bounds the records of one page of KVList.
	KVListMax = 1000
	// kvListDefault is a page's size when the request names none.
	kvListDefault = 100
)

// KVGetOptions tune a get.
type KVGetOptions struct {
	// Stale reads this node's replica of the partition (its leader's when
	// it has none) without proving it current: faster, but it may miss
	// puts acknowledged elsewhere moments ago.
	Stale bool
}

// KVRecord is a key's newest record.
type KVRecord struct {
	Key, Value  []byte
	Headers     []batch.Header
	Partition   int32
	Offset      int64
	TimestampMs int64
}

// KVPut is a put (or with Value nil, a delete) of one key.
type KVPut struct {
	Key     []byte
	Value   []byte // nil: a tombstone
	Headers []batch.Header
	// Expected, when set, makes the put conditional: it is refused with a
	// *KeyConflictError unless the key's newest record is at this offset
	// (KVAbsent: the key has no value).
	Expected *int64
	// Writer, when its ID is positive, makes the put idempotent (see the
	// file's comment): the record is stored as the batch of sequence 0
	// of producer ID at Epoch.
	Writer KVWriter
}

// KVWriter names the idempotent writer of one put.
type KVWriter struct {
	ID    int64
	Epoch int16
}

// producer is the batch header of a put by w.
func (w KVWriter) producer() batch.Producer {
	if w.ID <= 0 {
		return batch.NoProducer
	}
	return batch.Producer{ID: w.ID, Epoch: w.Epoch, Sequence: 0}
}

// KVPutResult is where a put's record was stored.
type KVPutResult struct {
	Partition   int32
	Offset      int64
	TimestampMs int64
}

// KeyConflictError refuses a conditional put: the key's newest record is
// at Latest (KVAbsent: it has none), not at Expected. It is of the kind
// kind.ErrFailedPrecondition.
type KeyConflictError struct {
	Topic            string
	Key              []byte
	Latest, Expected int64
}

func (e *KeyConflictError) Error() string {
	return fmt.Sprintf("topic %q key %q: the key's latest offset is %s, not %s: read it again and retry with its offset",
		e.Topic, e.Key, kvOffsetText(e.Latest), kvOffsetText(e.Expected))
}

func (e *KeyConflictError) Unwrap() error { return kind.ErrFailedPrecondition }

func kvOffsetText(o int64) string {
	if o == KVAbsent {
		return "none (the key has no value)"
	}
	return fmt.Sprint(o)
}

// kvView is the broker's part of the view: the index and the partitions'
// locks for conditional puts.
type kvView struct {
	index *kv.Store
	mu    sync.Mutex
	locks map[string]*sync.RWMutex // by partition name: a deleted topic's partition is not kept
}

func newKVView(db *pebble.DB) *kvView {
	return &kvView{index: kv.New(db), locks: map[string]*sync.RWMutex{}}
}

func (v *kvView) lock(p *partition.Partition) *sync.RWMutex {
	v.mu.Lock()
	defer v.mu.Unlock()
	l, ok := v.locks[p.Name()]
	if !ok {
		l = &sync.RWMutex{}
		v.locks[p.Name()] = l
	}
	return l
}

// kvPartition is the partition of topic that holds key, refused unless the
// topic is compacted.
func (b *Broker) kvPartition(ctx context.Context, topic string, key []byte) (*partition.Partition, partition.TopicConfig, error) {
	if len(key) == 0 {
		return nil, partition.TopicConfig{}, kind.Errorf(kind.ErrInvalidArgument, "key-value view of topic %q: the key is empty: name a key", topic)
	}
	cfg, parts, err := b.kvTopic(ctx, topic)
	if err != nil {
		return nil, cfg, err
	}
	return parts[routing.ForKey(key, len(parts))], cfg, nil
}

// kvTopic is a compacted topic's config and partitions.
func (b *Broker) kvTopic(ctx context.Context, topic string) (partition.TopicConfig, []*partition.Partition, error) {
	cfg, parts, err := b.topics.Partitions(topic)
	if err != nil {
		return cfg, nil, b.topicLookup(ctx, topic, err)
	}
	if c := cfg.Cleanups(); !c.Compacted() {
		return cfg, nil, kind.Errorf(kind.ErrFailedPrecondition,
			"topic %q is not compacted (cleanup.policy=%s): the key-value view serves compacted topics only: logd topic alter %s --cleanup-policy compact",
			topic, c.Policy, topic)
	}
	if len(parts) == 0 {
		return cfg, nil, kind.Errorf(ErrUnknownPartition, "topic %q has no partitions", topic)
	}
	return cfg, parts, nil
}

func kvPart(cfg partition.TopicConfig, p *partition.Partition) kv.Partition {
	return kv.Partition{Topic: p.Topic, ID: p.ID, Incarnation: cfg.CreatedMs, Log: p.Log}
}

// kvReadable makes a read of p here current (linearizable), or with stale
// makes sure this node has a replica of p to read; else it answers the
// plane's *NotLeaderError, which a Forwarder follows.
func (b *Broker) kvReadable(ctx context.Context, cfg partition.TopicConfig, p *partition.Partition, stale bool) error {
	if stale {
		if _, ok := b.plane.retentionLog(cfg, p); ok {
			return nil
		}
		return b.plane.mustLead(ctx, p)
	}
	return b.plane.current(ctx, p)
}

// KVGet returns key's newest record in topic; ok is false when the key
// has no value. pr must be allowed to read the topic.
func (b *Broker) KVGet(ctx context.Context, pr Principal, topic string, key []byte, opts KVGetOptions) (KVRecord, bool, error) {
	if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(topic)); err != nil {
		return KVRecord{}, false, err
	}
	if err := b.enter(); err != nil {
		return KVRecord{}, false, err
	}
	defer b.leave()
	return b.kvGet(ctx, topic, key, opts)
}

func (b *Broker) kvGet(ctx context.Context, topic string, key []byte, opts KVGetOptions) (KVRecord, bool, error) {
	p, cfg, err := b.kvPartition(ctx, topic, key)
	if err != nil {
		return KVRecord{}, false, err
	}
	if err := b.kvReadable(ctx, cfg, p, opts.Stale); err != nil {
		return KVRecord{}, false, err
	}
	rec, ok, err := b.kv.index.Get(kvPart(cfg, p), key)
	if err != nil || !ok {
		return KVRecord{}, false, err
	}
	return kvRecord(p.ID, rec), true, nil
}

func kvRecord(part int32, r kv.Record) KVRecord {
	return KVRecord{Key: r.Key, Value: r.Value, Headers: r.Headers, Partition: part, Offset: r.Offset, TimestampMs: r.TimestampMs}
}

// KVPut stores put's record as key's newest (a produce, acks=all), or
// with put.Expected set only when the key's newest record is the one
// expected (see the file's comment). pr must be allowed to write the
// topic, and to read it for a conditional put.
func (b *Broker) KVPut(ctx context.Context, pr Principal, topic string, put KVPut) (KVPutResult, error) {
	if err := b.Authorize(ctx, pr, auth.OpWrite, auth.Topic(topic)); err != nil {
		return KVPutResult{}, err
	}
	if put.Expected != nil {
		if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(topic)); err != nil {
			return KVPutResult{}, err
		}
		if *put.Expected < KVAbsent {
			return KVPutResult{}, kind.Errorf(kind.ErrInvalidArgument, "key-value put: expected offset %d: want an offset >= 0, or -1 for a key with no value", *put.Expected)
		}
	}
	if err := b.enter(); err != nil {
		return KVPutResult{}, err
	}
	defer b.leave()
	p, cfg, err := b.kvPartition(ctx, topic, put.Key)
	if err != nil {
		return KVPutResult{}, err
	}
	l := b.kv.lock(p)
	if put.Expected == nil {
		l.RLock()
		defer l.RUnlock()
	} else {
		l.Lock()
		defer l.Unlock()
		if err := b.kvCheck(ctx, topic, p, kvPart(cfg, p), put); err != nil {
			// A retry of a put its writer stored already: the first
			// attempt is what changed the key (or came before a put
			// that did), and its answer stands.
			if w := put.Writer.producer(); w.ID >= 0 {
				if res, ok := p.Appended(w.ID, w.Epoch, w.Sequence); ok {
					return KVPutResult{Partition: p.ID, Offset: res.BaseOffset, TimestampMs: time.Now().UnixMilli()}, nil
				}
			}
			return KVPutResult{}, err
		}
	}
	now := time.Now().UnixMilli()
	rec := batch.Record{Timestamp: now, Key: put.Key, Value: put.Value, Headers: put.Headers}
	data := batch.Encode(nil, 0, put.Writer.producer(), []batch.Record{rec})
	if len(data) > b.cfg.MaxBatchBytes {
		return KVPutResult{}, kind.Errorf(ErrBatchTooLarge, "key-value put: the record encodes to %d bytes, over the %d-byte batch limit", len(data), b.cfg.MaxBatchBytes)
	}
	res, err := b.Produce(ctx, ProduceRequest{Principal: pr, Topic: topic, Partition: p.ID, Batch: data, Acks: AcksAll})
	if err != nil {
		return KVPutResult{}, err
	}
	if res.BaseOffset < 0 {
		// A retry of a put stored so long ago that the partition no
		// longer remembers where: stored once, offset unknown.
		return KVPutResult{}, fmt.Errorf("key-value put: stored by an earlier attempt of writer %d epoch %d, at an offset the partition no longer remembers: get the key to read it", put.Writer.ID, put.Writer.Epoch)
	}
	ts := now
	if res.AppendTimeMs >= 0 {
		ts = res.AppendTimeMs
	}
	return KVPutResult{Partition: p.ID, Offset: res.BaseOffset, TimestampMs: ts}, nil
}

// kvCheck is a conditional put's check, under the partition's KV lock: on
// the leader, current, the key's newest record must be the one expected.
func (b *Broker) kvCheck(ctx context.Context, topic string, p *partition.Partition, kp kv.Partition, put KVPut) error {
	if err := b.plane.current(ctx, p); err != nil {
		return err
	}
	rec, ok, err := b.kv.index.Get(kp, put.Key)
	if err != nil {
		return err
	}
	latest := KVAbsent
	if ok {
		latest = rec.Offset
	}
	if latest != *put.Expected {
		return &KeyConflictError{Topic: topic, Key: put.Key, Latest: latest, Expected: *put.Expected}
	}
	return nil
}

// KVDelete stores a tombstone of key (KVPut with a nil value), conditional
// when expected is set.
func (b *Broker) KVDelete(ctx context.Context, pr Principal, topic string, key []byte, expected *int64) (KVPutResult, error) {
	return b.KVPut(ctx, pr, topic, KVPut{Key: key, Expected: expected})
}
