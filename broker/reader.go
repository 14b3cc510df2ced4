package broker

import (
	"context"

	"github.com/logd/logd/auth"

	"github.com/logd/logd/partition"
)

// Reader reads one partition from a position, for live tails (gRPC
// Subscribe, HTTP SSE) that keep their own budget and pace. It holds the
// broker open (Close waits for it) until Close.
type Reader struct {
	b        *Broker
	p        *partition.Partition
	maxBytes int
	once     bool
	// committed: read_committed reads (ReadCommitted).
	committed bool
}

// OpenReader resolves a partition for a live tail from offset, as Fetch
// does (in a cluster: on its leader, current); maxBytes is the share of a
// read asked for (0: DefaultFetchBytes; capped at MaxFetchBytes).
func (b *Broker) OpenReader(ctx context.Context, pr Principal, topic string, part int32, offset int64, maxBytes int) (*Reader, error) {
	if err := b.Authorize(ctx, pr, auth.OpRead, auth.Topic(topic)); err != nil {
		return nil, err
	}
	if err := b.enter(); err != nil {
		return nil, err
	}
	t, err := b.target(ctx, topic, part, offset, maxBytes)
	if err != nil {
		b.leave()
		return nil, err
	}
	return &Reader{b: b, p: t.p, maxBytes: t.maxBytes}, nil
}

// MaxBytes is the resolved share of a read.
func (r *Reader) MaxBytes() int { return r.maxBytes }

// Name is the partition's name, "topic-partition" (t-0).
func (r *Reader) Name() string { return r.p.Name() }

// Read reads what is committed at offset (at most maxBytes unless the
// first batch is larger) into memory of its own, without waiting: at the
// high watermark it reads nothing.
func (r *Reader) Read(offset int64, maxBytes int) (FetchedPartition, error) {
	fp, err := r.b.readAt(r.p, offset, maxBytes, nil)
	if err == nil && r.committed {
		_, err = readCommittedNative(r.p, offset, &fp)
	}
	return fp, err
}

// Changed is closed at the partition's next commit: take it before Read.
func (r *Reader) Changed() <-chan struct{} { return r.p.Log.Changed() }

// StillServed fails when the partition's topic was deleted (or deleted
// and created again) since the reader opened.
func (r *Reader) StillServed() error { return r.b.stillServed(r.p) }

// Close releases the reader.
func (r *Reader) Close() {
	if !r.once {
		r.once = true
		r.b.leave()
	}
}
