package broker

import (
	"context"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
)

// dropAborted removes from a read_committed read the batches its reader
// must never see: control batches (the markers) and the batches of the
// aborted transactions fp.Aborted lists. It is what logd's own readers
// (gRPC, HTTP, the CLI) get; Kafka clients drop those themselves from
// the list. The batches move down in place (the read's memory is its
// own); NextOffset is kept, so a read whose batches were all dropped
// still moves its reader past them. It returns the bytes dropped.
func dropAborted(fp *FetchedPartition) int {
	if len(fp.Batches) == 0 {
		return 0
	}
	kept, at, records := 0, 0, 0
	err := batch.Split(fp.Batches, func(one []byte, info batch.Info) error {
		start := at
		at += len(one)
		if info.IsControl() || (info.IsTransactional() && abortedIn(fp.Aborted, info)) {
			return nil
		}
		if kept != start {
			// Only after a dropped batch do the kept ones move: a read
			// with nothing to drop (no transactions) copies nothing.
			copy(fp.Batches[kept:], one)
		}
		kept += len(one)
		records += int(info.NumRecords)
		return nil
	})
	if err != nil {
		// Batches were split once already when read: unreachable, and
		// what was read stays as it is.
		return 0
	}
	dropped := len(fp.Batches) - kept
	fp.Batches, fp.Records, fp.Aborted = fp.Batches[:kept], records, nil
	return dropped
}

// abortedIn reports whether a transactional batch belongs to one of the
// aborted transactions: same producer, between its first offset and its
// marker.
func abortedIn(aborted []AbortedTxn, info batch.Info) bool {
	for _, a := range aborted {
		if a.ProducerID == info.ProducerID && a.FirstOffset <= info.BaseOffset && info.BaseOffset <= a.LastOffset {
			return true
		}
	}
	return false
}

// readCommittedNative is readCommitted with dropAborted: what logd's own
// readers get under read_committed. It returns the bytes dropped.
func readCommittedNative(p *partition.Partition, offset int64, fp *FetchedPartition) (int, error) {
	if err := readCommitted(p, offset, fp); err != nil {
		return 0, err
	}
	return dropAborted(fp), nil
}

// ReadCommitted makes the reader's reads read_committed, as a fetch with
// ReadCommitted and DropAborted: they stop at the partition's last stable
// offset and leave out markers and aborted transactions.
func (r *Reader) ReadCommitted() { r.committed = true }

// opLastStable asks a partition's leader for its last stable offset; the
// name is part of the peer protocol.
const opLastStable = "records.last_stable"

// ListOffsetsIsolated is ListOffsets for a reader of the given isolation:
// under read_committed, Latest resolves to each partition's last stable
// offset (where a read_committed reader that starts at the end begins,
// as Kafka's ListOffsets under read_committed answers), read on its
// leader; every other spec, and read_uncommitted, as ListOffsets.
func (b *Broker) ListOffsetsIsolated(ctx context.Context, pr Principal, topic string, ids []int32, spec int64, committed bool) ([]PartitionOffset, error) {
	pos, err := b.ListOffsets(ctx, pr, topic, ids, spec)
	if err != nil || !committed || spec != Latest {
		return pos, err
	}
	err = eachPartition(ctx, len(pos), func(ctx context.Context, i int) error {
		lso, err := b.lastStable(ctx, pr, topic, pos[i].Partition)
		if err != nil {
			return err
		}
		// Read after the high watermark: a higher one is stable too, and
		// every offset below the high watermark read first is decided
		// once no transaction is open below it.
		pos[i].Offset = min(lso, pos[i].HighWatermark)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pos, nil
}

// lastStable is LastStableOffset on the partition's leader: here, or
// over the peer service.
func (b *Broker) lastStable(ctx context.Context, pr Principal, topic string, part int32) (int64, error) {
	lso, err := b.LastStableOffset(ctx, pr, topic, part)
	if addr, ok := passOn(ctx, err); ok {
		err = b.peerCall(ctx, addr, opLastStable, pr, recordsReq{Topic: topic, Partition: part}, &lso)
	}
	return lso, err
}

// handleLastStablePeers registers opLastStable.
func (b *Broker) handleLastStablePeers() {
	handle(b, opLastStable, func(ctx context.Context, pr Principal, r recordsReq) (any, error) {
		return b.LastStableOffset(ctx, pr, r.Topic, r.Partition)
	})
}
