package broker

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
)

// How a watch reads each partition: a long poll of at most
// kvWatchPoll, kvWatchBytes at a time; after an answer to retry (an
// election, a node catching up) it waits kvWatchRetry.
const (
	kvWatchPoll  = 10 * time.Second
	kvWatchBytes = 256 << 10
	kvWatchRetry = 200 * time.Millisecond
)

// KVWatch calls fn with every record stored in topic after the watch
// began whose key starts with prefix (nil: every key): a put, or with a
// nil Value a delete. Each partition's records come in offset order (the
// partitions interleave); fn is never called concurrently. It reads each
// partition as a live tail does, on its leader wherever that is
// (Forwarder.Fetch), and returns when ctx ends (its error), fn fails (fn's
// error), a partition cannot be read (its error), or the broker shuts
// down (nil). The record's slices are fn's only until it returns. pr must
// be allowed to read the topic.
func (a AnyNode) KVWatch(ctx context.Context, pr Principal, topic string, prefix []byte, fn func(KVRecord) error) error {
	b := a.Broker
	if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(topic)); err != nil {
		return err
	}
	if _, _, err := b.kvTopic(ctx, topic); err != nil {
		return err
	}
	ends, err := b.ListOffsets(ctx, pr, topic, nil, cluster.Latest)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex // serializes fn
	var first error
	var once sync.Once
	fail := func(err error) { once.Do(func() { first = err; stop() }) }
	var wg sync.WaitGroup
	for _, end := range ends {
		wg.Go(func() {
			err := a.watchPartition(ctx, pr, topic, end.Partition, end.Offset, func(r KVRecord) error {
				if !bytes.HasPrefix(r.Key, prefix) {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fn(r)
			})
			if err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	select {
	case <-b.shutdown:
		return nil
	default:
	}
	return first
}

// watchPartition reads one partition from offset and calls fn with each
// keyed record, until ctx ends or the broker shuts down.
func (a AnyNode) watchPartition(ctx context.Context, pr Principal, topic string, part int32, offset int64, fn func(KVRecord) error) error {
	for {
		select {
		case <-a.shutdown:
			return nil
		default:
		}
		res, err := a.Fetch(ctx, FetchRequest{Principal: pr, MinBytes: 1, MaxBytes: kvWatchBytes, MaxWait: kvWatchPoll, Decode: true,
			Partitions: []FetchPartition{{Topic: topic, Partition: part, Offset: offset, MaxBytes: kvWatchBytes}}})
		if err != nil {
			return err
		}
		fp := res.Partitions[0]
		next, err := watchBatches(fp, offset, fn)
		res.Release()
		var oor *log.OutOfRangeError
		switch {
		case errors.As(fp.Err, &oor) && offset < oor.StartOffset:
			// Retention removed records the watch had not read.
			offset = oor.StartOffset
			continue
		case fp.Err != nil && retryLater(fp.Err):
			if err := sleepCtx(ctx, kvWatchRetry); err != nil {
				return err
			}
			continue
		case fp.Err != nil:
			return fp.Err
		case err != nil:
			return err
		}
		offset = next
	}
}

// watchBatches calls fn with each keyed record of fp's batches from
// offset and returns the offset after them.
func watchBatches(fp FetchedPartition, offset int64, fn func(KVRecord) error) (int64, error) {
	if fp.Err != nil || len(fp.Batches) == 0 {
		return offset, nil
	}
	err := batch.Split(fp.Batches, func(one []byte, info batch.Info) error {
		if info.Attributes&batch.AttrControl == 0 {
			_, recs, err := batch.Decode(one, offset)
			if err != nil {
				return kind.Errorf(ErrLogCorrupt, "watch %s-%d at offset %d: %v", fp.Topic, fp.Partition, offset, err)
			}
			for _, r := range recs {
				if r.Key == nil {
					continue
				}
				rec := KVRecord{Key: r.Key, Value: r.Value, Headers: r.Headers, Partition: fp.Partition, Offset: r.Offset, TimestampMs: r.Timestamp}
				if err := fn(rec); err != nil {
					return err
				}
			}
		}
		offset = max(offset, info.NextOffset())
		return nil
	})
	return offset, err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
