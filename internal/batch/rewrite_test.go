package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rewrite keeps what a compacted batch must keep: its base offset, last
// offset delta, leader epoch and producer fields, and each kept record's
// offset and timestamp; Decode reads it back, with its gaps.
func TestRewriteKeepsOffsetsAndProducer(t *testing.T) {
	orig := Encode(nil, 100, Producer{ID: 7, Epoch: 3, Sequence: 40}, sample())
	SetLeaderEpoch(orig, 9)
	info, recs, err := Decode(orig, 0)
	if err != nil {
		t.Fatal(err)
	}
	kept := []Record{recs[0], recs[2]}
	b, err := Rewrite(nil, info, kept)
	if err != nil {
		t.Fatal(err)
	}
	got, out, err := Decode(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.BaseOffset != 100 || got.NextOffset() != 103 || got.NumRecords != 2 || got.LeaderEpoch != 9 {
		t.Fatalf("header %+v: want base 100, next 103, 2 records, epoch 9", got)
	}
	if got.ProducerID != 7 || got.ProducerEpoch != 3 || got.FirstSequence != 40 {
		t.Fatalf("producer %d/%d/%d, want 7/3/40", got.ProducerID, got.ProducerEpoch, got.FirstSequence)
	}
	if got.FirstTimestamp != 1000 || got.MaxTimestamp != 1500 {
		t.Fatalf("timestamps %d..%d, want the kept records' 1000..1500", got.FirstTimestamp, got.MaxTimestamp)
	}
	for i, r := range out {
		w := kept[i]
		if r.Offset != w.Offset || r.Timestamp != w.Timestamp || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) {
			t.Fatalf("record %d = %+v, want %+v", i, r, w)
		}
	}
	if _, err := Verify(b); err != nil {
		t.Fatalf("CRC: %v", err)
	}
	// A batch with gaps is the cleaner's: produce and replication refuse it.
	if _, err := CheckFrame(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("CheckFrame of a batch with gaps: %v, want ErrCorrupt", err)
	}
}

// A batch whose records all went stays, empty, owning its offsets, with
// its producer fields and max timestamp.
func TestRewriteEmpty(t *testing.T) {
	orig := Encode(nil, 50, Producer{ID: 7, Epoch: 0, Sequence: 5}, sample())
	info, _, err := Decode(orig, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Rewrite(nil, info, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, recs, err := Decode(b, 0)
	if err != nil || len(recs) != 0 || len(b) != HeaderSize {
		t.Fatalf("empty rewrite: %d records, %d bytes, %v", len(recs), len(b), err)
	}
	if got.NextOffset() != 53 || got.FirstSequence != 5 || got.MaxTimestamp != 1500 {
		t.Fatalf("empty rewrite %+v: want next 53, sequence 5, max timestamp 1500", got)
	}
}

// Decode refuses offset deltas that do not increase or pass the last
// offset delta.
func TestDecodeRefusesBadOffsetDeltas(t *testing.T) {
	info, recs, err := Decode(Encode(nil, 0, NoProducer, sample()), 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, offs := range map[string][]int64{"repeated": {1, 1}, "decreasing": {2, 1}, "past the last": {1, 3}} {
		kept := []Record{recs[0], recs[1]}
		kept[0].Offset, kept[1].Offset = offs[0], offs[1]
		b, _ := Rewrite(nil, info, kept)
		if _, _, err := Decode(b, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s offsets %v: %v, want ErrCorrupt", name, offs, err)
		}
	}
	// More records than offsets.
	b := Encode(nil, 0, NoProducer, sample())
	binary.BigEndian.PutUint32(b[23:], 1) // last offset delta 1 for 3 records
	binary.BigEndian.PutUint32(b[crcOffset:], Checksum(b))
	if _, err := ParseHeader(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("3 records in 2 offsets: %v, want ErrCorrupt", err)
	}
}

// A compressed batch is rewritten with its codec: Decode and franz-go's
// decompressor read the kept records, and the batch shrinks.
func TestRewriteKeepsCodec(t *testing.T) {
	var recs []Record
	for i := range 50 {
		recs = append(recs, Record{Timestamp: int64(1000 + i), Key: []byte{byte('a' + i%5)}, Value: bytes.Repeat([]byte{byte(i)}, 100)})
	}
	plain := Encode(nil, 10, Producer{ID: 3, Epoch: 1, Sequence: 7}, recs)
	for _, c := range kgoCodecs {
		orig := compressBatch(t, plain, c.codec, kgoCompress(t, c.kgo, c.codec))
		info, all, err := Decode(orig, 0)
		if err != nil {
			t.Fatal(err)
		}
		kept := all[45:]
		b, err := Rewrite(nil, info, kept)
		if err != nil {
			t.Fatalf("%s: %v", codecName(c.codec), err)
		}
		got, out, err := Decode(b, 0)
		if err != nil || len(out) != 5 || got.Attributes&AttrCompressionMask != c.codec || got.NextOffset() != 60 {
			t.Fatalf("%s: %d records, attributes %#x, next %d, %v", codecName(c.codec), len(out), got.Attributes, got.NextOffset(), err)
		}
		for i, r := range out {
			if r.Offset != kept[i].Offset || !bytes.Equal(r.Value, kept[i].Value) {
				t.Fatalf("%s: record %d = offset %d", codecName(c.codec), i, r.Offset)
			}
		}
		if len(b) >= len(orig) {
			t.Errorf("%s: rewrite of 5 of 50 records is %d bytes, the original %d", codecName(c.codec), len(b), len(orig))
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		d := kgo.DefaultDecompressor()
		raw, err := d.Decompress(rb.Records, kgo.CompressionCodecType(c.codec))
		if err != nil || len(raw) == 0 {
			t.Fatalf("%s: franz-go decompress: %v", codecName(c.codec), err)
		}
	}
}
