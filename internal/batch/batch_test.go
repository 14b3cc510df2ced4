package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sample() []Record {
	return []Record{
		{Timestamp: 1000, Key: []byte("k1"), Value: []byte("v1")},
		{Timestamp: 999, Key: nil, Value: []byte("v2"), Headers: []Header{{Key: "h", Value: []byte("x")}}},
		{Timestamp: 1500, Key: []byte("k3"), Value: bytes.Repeat([]byte("z"), 300)},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	p := Producer{ID: 7, Epoch: 1, Sequence: 42}
	b := Encode(nil, 100, p, sample())
	info, recs, err := Decode(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseOffset != 100 || info.NumRecords != 3 || info.LastOffset() != 102 || info.NextOffset() != 103 {
		t.Fatalf("info %+v", info)
	}
	if info.FirstTimestamp != 999 || info.MaxTimestamp != 1500 {
		t.Fatalf("timestamps %d %d", info.FirstTimestamp, info.MaxTimestamp)
	}
	if info.ProducerID != 7 || info.ProducerEpoch != 1 || info.FirstSequence != 42 {
		t.Fatalf("producer %+v", info)
	}
	want := sample()
	for i, r := range recs {
		if r.Offset != int64(100+i) || r.Timestamp != want[i].Timestamp || !bytes.Equal(r.Key, want[i].Key) || !bytes.Equal(r.Value, want[i].Value) {
			t.Fatalf("record %d = %+v", i, r)
		}
	}
	if len(recs[1].Headers) != 1 || recs[1].Headers[0].Key != "h" {
		t.Fatalf("headers %+v", recs[1].Headers)
	}
	// kmsg reads what we wrote, including the CRC we computed.
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil || rb.NumRecords != 3 {
		t.Fatalf("kmsg: %v %+v", err, rb)
	}
	// Skipping records below an offset.
	_, recs, _ = Decode(b, 102)
	if len(recs) != 1 || recs[0].Offset != 102 {
		t.Fatalf("from 102: %+v", recs)
	}
}

func TestRewriteOutsideCRC(t *testing.T) {
	b := Encode(nil, 0, NoProducer, sample())
	SetBaseOffset(b, 1<<40)
	SetLeaderEpoch(b, 9)
	info, err := Verify(b)
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseOffset != 1<<40 || info.LeaderEpoch != 9 {
		t.Fatalf("%+v", info)
	}
}

func TestCorruptionDetected(t *testing.T) {
	b := Encode(nil, 0, NoProducer, sample())
	for i := crcStart; i < len(b); i++ {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, err := Verify(c); err == nil {
			t.Fatalf("flip at byte %d not detected", i)
		}
	}
	for n := 0; n < len(b); n++ {
		if _, err := Verify(b[:n]); !errors.Is(err, ErrShort) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
}

func TestSplit(t *testing.T) {
	var all []byte
	all = Encode(all, 0, NoProducer, sample())
	all = Encode(all, 3, NoProducer, sample()[:1])
	var bases []int64
	err := Split(all, func(b []byte, info Info) error {
		bases = append(bases, info.BaseOffset)
		return nil
	})
	if err != nil || len(bases) != 2 || bases[1] != 3 {
		t.Fatalf("%v %v", err, bases)
	}
	if err := Split(all[:len(all)-1], func([]byte, Info) error { return nil }); !errors.Is(err, ErrShort) {
		t.Fatalf("short: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(nil, 0, NoProducer, sample()))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		info, recs, err := Decode(b, math.MinInt64) // any base offset, even negative
		if verr := func() error {
			vi, err := Verify(b)
			if err != nil {
				return err
			}
			return ValidateRecords(b, vi)
		}(); (verr == nil) != (err == nil) {
			// Validation and decoding agree on what is well-formed, except
			// where Decode reads deeper (keys, values, headers).
			if verr == nil && err != nil {
				return
			}
			t.Fatalf("ValidateRecords %v, Decode %v", verr, err)
		}
		if err != nil {
			return
		}
		if len(recs) != int(info.NumRecords) {
			t.Fatalf("%d records, header says %d", len(recs), info.NumRecords)
		}
		// What decodes re-encodes to a batch that decodes the same.
		again := Encode(nil, info.BaseOffset, Producer{info.ProducerID, info.ProducerEpoch, info.FirstSequence}, recs)
		_, recs2, err := Decode(again, math.MinInt64)
		if err != nil || len(recs2) != len(recs) {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

// TestValidateRecordsRejectsBadOffsetDeltas: a batch whose CRC is right but
// whose records are numbered wrongly is refused before it is stored.
func TestValidateRecordsRejectsBadOffsetDeltas(t *testing.T) {
	good := Encode(nil, 0, NoProducer, sample())
	info, err := Verify(good)
	if err != nil || ValidateRecords(good, info) != nil {
		t.Fatalf("good batch: %v %v", err, ValidateRecords(good, info))
	}
	// Re-encode the records with offset deltas 0, 0, 1 and a fresh CRC.
	var recs []byte
	for i, d := range []int32{0, 0, 1} {
		r := kmsg.Record{OffsetDelta: d, Value: sample()[i].Value}
		body := r.AppendTo(nil)[1:] // drop the zero length prefix
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	bad := append(bytes.Clone(good[:HeaderSize]), recs...)
	binary.BigEndian.PutUint32(bad[lengthOffset:], uint32(len(bad)-12))
	binary.BigEndian.PutUint32(bad[crcOffset:], Checksum(bad))
	info, err = Verify(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateRecords(bad, info); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad offset deltas: %v", err)
	}
	if _, _, err := Decode(bad, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode of bad offset deltas: %v", err)
	}
}
