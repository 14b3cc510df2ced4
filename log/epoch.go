package log

import (
	"errors"
	"fmt"

	"github.com/logd/logd/internal/batch"
)

// maxEpochProbes bounds EpochEnd's reads: a binary search over offsets
// takes about log2(records) of them, so 64 covers every log.
const maxEpochProbes = 64

// EpochEnd answers Kafka's OffsetForLeaderEpoch over the committed log:
// the end offset of leader epoch epoch (the base offset of the first batch
// below the high watermark whose leader epoch is larger, or the high
// watermark when there is none) and the largest epoch at or below epoch
// that a batch holds (epoch itself when no batch before that end holds
// one). Batches hold their leader's epoch (the Raft term, stamped at
// append) and epochs never decrease along a log, so a binary search finds
// the end in about log2(records) reads of one batch each. Records below
// the log start are not looked at: the end is at least the start.
func (l *Log) EpochEnd(epoch int32) (found int32, end int64, err error) {
	for range 2 { // retention may move the start under the search: once more
		found, end, err = l.epochEnd(epoch)
		if !errors.Is(err, ErrOffsetOutOfRange) {
			break
		}
	}
	return found, end, err
}

func (l *Log) epochEnd(epoch int32) (int32, int64, error) {
	lo, hi := l.StartOffset(), l.HighWatermark()
	start := lo
	for probes := 0; lo < hi; probes++ {
		if probes == maxEpochProbes {
			return 0, 0, fmt.Errorf("log: epoch %d end: no answer after %d reads between offsets %d and %d", epoch, probes, lo, hi)
		}
		info, err := l.batchAt(lo + (hi-lo)/2)
		if err != nil {
			return 0, 0, err
		}
		if info.LeaderEpoch > epoch {
			// A batch after a compacted gap: no record lies between the
			// probe and it.
			hi = max(min(info.BaseOffset, lo+(hi-lo)/2), start)
		} else {
			lo = info.NextOffset()
		}
	}
	if hi == start {
		return epoch, hi, nil
	}
	// The batch before the end holds the largest epoch at or below epoch.
	info, err := l.batchAt(hi - 1)
	if err != nil {
		return 0, 0, err
	}
	if info.BaseOffset > hi-1 {
		// hi-1 lies in a compacted gap: the batch that held the largest
		// epoch at or below epoch is gone; its epoch was at most epoch.
		return epoch, hi, nil
	}
	return info.LeaderEpoch, hi, nil
}

// batchAt is the header of the committed batch holding offset, or of the
// next one when offset lies in a compacted gap.
func (l *Log) batchAt(offset int64) (batch.Info, error) {
	b, err := l.Read(offset, 1)
	if err != nil {
		return batch.Info{}, err
	}
	info, err := batch.ParseHeader(b)
	if err != nil {
		return batch.Info{}, fmt.Errorf("log: batch at offset %d: %w", offset, err)
	}
	if offset > info.LastOffset() {
		return batch.Info{}, fmt.Errorf("%w: the batch read at offset %d holds %d to %d", ErrCorrupt, offset, info.BaseOffset, info.LastOffset())
	}
	return info, nil
}
