package broker

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/routing"
)

// AnyPartition is the Partition of a Record the broker routes.
const AnyPartition int32 = -1

// Record is a plain record for ProduceRecords.
type Record struct {
	// Partition is the record's partition, or AnyPartition: then a record
	// with a key (Key != nil, even empty) goes to its key's partition
	// (routing.ForKey, as a Kafka client puts it), and the request's
	// records without one go together to one partition (sticky).
	Partition   int32
	Key, Value  []byte
	Headers     []batch.Header
	TimestampMs int64 // 0: now
}

// RecordsRequest is a produce of plain records: the broker routes them,
// encodes one batch per partition and appends the batches in parallel.
type RecordsRequest struct {
	Principal Principal
	Topic     string
	Records   []Record
	Acks      Acks
	// ProducerID, when not negative, makes each batch the first (epoch 0,
	// sequence 0) of that producer, so a retry of the same request is
	// answered as a duplicate, and sends the unkeyed records to the
	// partition the id names, so a retry routes them the same way. -1:
	// not idempotent; unkeyed records take turns between partitions.
	ProducerID int64
}

// RecordsAppend is one partition's share of a ProduceRecords request.
type RecordsAppend struct {
	Partition int32
	// Records are the request's records in this partition's batch, by
	// index, in the order they were stored.
	Records []int
	Result  ProduceResult
	// Err is this partition's failure; the other partitions' batches
	// were written or failed on their own.
	Err   error
	batch []byte
}

// sticky spreads the unkeyed records of requests without a producer id:
// one partition per request, the next one for the next request.
var sticky atomic.Uint32

// ProduceRecords routes r's records to the topic's partitions, encodes a
// batch for each and appends them in parallel (each as Produce does, the
// principal authorized to write). It answers the partitions in order,
// each with its result or error. Every batch is routed, encoded and
// checked before any is appended: a request it refuses (an error
// returned) stores nothing, so its retry cannot duplicate.
func (b *Broker) ProduceRecords(ctx context.Context, r RecordsRequest) ([]RecordsAppend, error) {
	return b.produceRecords(ctx, r, b.Produce)
}

// produceRecords is ProduceRecords, each partition's batch appended by
// produce (Broker.Produce, or Forwarder's, which passes on a batch for a
// partition another node leads).
func (b *Broker) produceRecords(ctx context.Context, r RecordsRequest, produce func(context.Context, ProduceRequest) (ProduceResult, error)) ([]RecordsAppend, error) {
	n, err := b.PartitionCount(ctx, r.Principal, r.Topic)
	if err != nil {
		return nil, err
	}
	writes, err := routeRecords(r, n)
	if err != nil {
		return nil, err
	}
	if err := b.encodeRecords(writes, r); err != nil {
		return nil, err
	}
	appendOne := func(w *RecordsAppend) {
		w.Result, w.Err = produce(ctx, ProduceRequest{Principal: r.Principal, Topic: r.Topic,
			Partition: w.Partition, Batch: w.batch, Acks: r.Acks})
		w.batch = nil
	}
	if len(writes) == 1 {
		appendOne(&writes[0])
		return writes, nil
	}
	var wg sync.WaitGroup
	for i := range writes {
		wg.Go(func() { appendOne(&writes[i]) })
	}
	wg.Wait()
	return writes, nil
}

// routeRecords assigns each record its partition (Record.Partition) and
// groups them by partition, in partition order. It checks every named
// partition before anything is written.
func routeRecords(r RecordsRequest, n int32) ([]RecordsAppend, error) {
	if len(r.Records) == 0 {
		return nil, kind.Errorf(kind.ErrInvalidArgument, "produce: no records: send at least one")
	}
	if n <= 0 {
		return nil, kind.Errorf(ErrUnknownPartition, "topic %q has no partitions", r.Topic)
	}
	var unkeyed int32
	if r.ProducerID >= 0 {
		unkeyed = int32(r.ProducerID % int64(n))
	} else {
		unkeyed = int32(sticky.Add(1) % uint32(n))
	}
	byPartition := map[int32]int{} // partition -> index in writes
	var writes []RecordsAppend
	for i := range r.Records {
		rec := &r.Records[i]
		var part int32
		switch {
		case rec.Partition >= n || rec.Partition < AnyPartition:
			return nil, kind.Errorf(ErrUnknownPartition, "record %d: partition %d does not exist, the topic %q has %d (0 to %d)", i, rec.Partition, r.Topic, n, n-1)
		case rec.Partition >= 0:
			part = rec.Partition
		case rec.Key != nil:
			part = routing.ForKey(rec.Key, int(n))
		default:
			part = unkeyed
		}
		w, ok := byPartition[part]
		if !ok {
			w = len(writes)
			byPartition[part] = w
			writes = append(writes, RecordsAppend{Partition: part})
		}
		writes[w].Records = append(writes[w].Records, i)
	}
	slices.SortFunc(writes, func(a, b RecordsAppend) int { return int(a.Partition - b.Partition) })
	return writes, nil
}

// encodeRecords encodes each partition's batch, refusing the request when
// any is over MaxBatchBytes.
func (b *Broker) encodeRecords(writes []RecordsAppend, r RecordsRequest) error {
	prod := batch.NoProducer
	if r.ProducerID >= 0 {
		prod = batch.Producer{ID: r.ProducerID, Epoch: 0, Sequence: 0}
	}
	now := time.Now().UnixMilli()
	var recs []batch.Record
	for i := range writes {
		w := &writes[i]
		recs = recs[:0]
		for _, j := range w.Records {
			rec := &r.Records[j]
			ts := rec.TimestampMs
			if ts == 0 {
				ts = now
			}
			recs = append(recs, batch.Record{Timestamp: ts, Key: rec.Key, Value: rec.Value, Headers: rec.Headers})
		}
		w.batch = batch.Encode(nil, 0, prod, recs)
		if len(w.batch) > b.cfg.MaxBatchBytes {
			return kind.Errorf(ErrBatchTooLarge, "produce: the records for partition %d encode to %d bytes, over the %d-byte batch limit: send fewer or smaller records", w.Partition, len(w.batch), b.cfg.MaxBatchBytes)
		}
	}
	return nil
}
