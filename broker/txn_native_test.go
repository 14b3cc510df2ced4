package broker

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/logd/logd/internal/batch"
)

// txnBatch is a transactional batch of producer pid at offset off
// holding value.
func txnBatch(dst []byte, pid, off int64, value string) []byte {
	start := len(dst)
	dst = batch.Encode(dst, off, batch.Producer{ID: pid, Epoch: 0, Sequence: 0}, []batch.Record{{Value: []byte(value)}})
	b := dst[start:]
	binary.BigEndian.PutUint16(b[21:], batch.AttrTransactional) // attributes
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))       // crc
	return dst
}

// A read_committed read for logd's own readers keeps the batches of
// committed transactions and plain batches, and leaves out the markers
// and the batches of aborted transactions; its next offset is kept.
func TestDropAbortedLeavesOutMarkersAndAborted(t *testing.T) {
	var b []byte
	b = txnBatch(b, 7, 0, "aborted")
	marker := batch.EncodeControl(nil, batch.Producer{ID: 7}, false, 0, 0)
	batch.SetBaseOffset(marker, 1)
	b = append(b, marker...)
	b = txnBatch(b, 8, 2, "committed")
	marker = batch.EncodeControl(nil, batch.Producer{ID: 8}, true, 0, 0)
	batch.SetBaseOffset(marker, 3)
	b = append(b, marker...)
	b = batch.Encode(b, 4, batch.NoProducer, []batch.Record{{Value: []byte("plain")}})
	fp := FetchedPartition{Batches: b, Records: 5, NextOffset: 5,
		Aborted: []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 1}}}
	total := len(b)
	dropped := dropAborted(&fp)
	var got []string
	if err := batch.Split(fp.Batches, func(one []byte, info batch.Info) error {
		_, recs, err := batch.Decode(one, 0)
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"committed", "plain"}) || fp.Records != 2 || fp.NextOffset != 5 ||
		dropped != total-len(fp.Batches) || fp.Aborted != nil {
		t.Fatalf("kept %q, %d records, next %d, dropped %d of %d (kept %d bytes), aborted %v",
			got, fp.Records, fp.NextOffset, dropped, total, len(fp.Batches), fp.Aborted)
	}
}
