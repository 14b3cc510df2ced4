package batch

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"unicode/utf8"

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
		vc, verr := Validate(b)
		vinfo := vc.Info()
		if verr == nil {
			// What Validate accepts, every decoding reader can read.
			if err != nil {
				t.Fatalf("Validate accepts a batch Decode refuses: %v", err)
			}
			for _, r := range recs {
				for _, h := range r.Headers {
					if !utf8.ValidString(h.Key) {
						t.Fatalf("Validate accepts header key %q", h.Key)
					}
				}
			}
			if vinfo != info {
				t.Fatalf("Validate %+v, Decode %+v", vinfo, info)
			}
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
