package broker

import (
	"fmt"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/share"
)

// shareKeyChunk bounds one read of the log that learns the keys of a
// share partition's window (shareLearnKeys).
const shareKeyChunk = 1 << 20

// shareKeys are the keys of the records in batches, for a share
// partition with per-key ordering (share.Keys): control batches and
// keyless records have none. A batch that does not decode has none
// either; the fetch that returns it fails the same way on the client.
func shareKeys(batches []byte) share.Keys {
	keys := map[int64]uint64{}
	batch.Split(batches, func(one []byte, info batch.Info) error {
		if info.IsControl() {
			return nil
		}
		_, recs, err := batch.Decode(one, 0)
		if err != nil {
			return nil
		}
		for _, r := range recs {
			if r.Key != nil {
				keys[r.Offset] = share.KeyHash(r.Key)
			}
		}
		return nil
	})
	return func(o int64) (uint64, bool) {
		h, ok := keys[o]
		return h, ok
	}
}

// shareLearnKeys reads from the log the keys of q's records whose keys
// it does not know (a state just loaded, or ordering just turned on), a
// chunk at a time.
func (b *Broker) shareLearnKeys(part *partition.Partition, q *share.Partition) error {
	from, to, ok := q.UnknownKeys()
	for ok && from < to {
		fp, err := b.readAt(part, from, shareKeyChunk, nil)
		if err != nil {
			return fmt.Errorf("share partition %s/%d: reading the keys of the records in flight: %w", part.Topic, part.ID, err)
		}
		if fp.NextOffset <= from {
			break // nothing more in the log: the rest stay unknown
		}
		q.SetKeys(from, fp.NextOffset, shareKeys(fp.Batches))
		from = fp.NextOffset
	}
	return nil
}
