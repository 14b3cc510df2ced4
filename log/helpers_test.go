package log

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/logd/logd/internal/batch"
)

const testDir = "/data/p0"

// testBatch encodes n records with timestamps ts, ts+1, ... whose values
// name them, padded to valSize.
func testBatch(n int, ts int64, valSize int) []byte {
	recs := make([]batch.Record, n)
	for i := range recs {
		v := fmt.Appendf(nil, "ts=%d/%d", ts, i)
		if len(v) < valSize {
			v = append(v, bytes.Repeat([]byte{'.'}, valSize-len(v))...)
		}
		recs[i] = batch.Record{Timestamp: ts + int64(i), Key: []byte("k"), Value: v}
	}
	return batch.Encode(nil, 0, batch.NoProducer, recs)
}

func mustOpen(t testing.TB, fs FS, opts Options) *Log {
	t.Helper()
	opts.FS = fs
	l, err := Open(testDir, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte) batch.Info {
	t.Helper()
	info, err := l.Append(b)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return info
}

// readAll reads every batch from offset from to the high watermark and
// returns their records, checking each batch's CRC and offset contiguity.
func readAll(t testing.TB, l *Log, from int64) []batch.Record {
	t.Helper()
	return readRange(t, l, from, l.HighWatermark())
}

// readRange is readAll up to offset to (a batch boundary).
func readRange(t testing.TB, l *Log, from, to int64) []batch.Record {
	t.Helper()
	var out []batch.Record
	off := from
	for off < to {
		b, err := l.Read(off, 1000)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("read %d below hw %d: no bytes", off, l.HighWatermark())
		}
		err = batch.Split(b, func(raw []byte, info batch.Info) error {
			_, recs, err := batch.Decode(raw, off)
			if err != nil {
				return err
			}
			if len(recs) == 0 || recs[0].Offset != off {
				return fmt.Errorf("batch %d..%d does not continue at %d", info.BaseOffset, info.LastOffset(), off)
			}
			out = append(out, recs...)
			off = info.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
	}
	return out
}

func segName(base int64, suffix string) string { return segmentPath(testDir, base, suffix) }

func wantErrIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// frames gives es's batch entries their Batch, checked from Data
// (batch.CheckFrame), as the replication log store does; one that fails
// the check keeps none, and AppendEntries refuses it.
func frames(es []Entry) []Entry {
	for i := range es {
		if es[i].Kind == KindBatch {
			es[i].Batch, _ = batch.CheckFrame(es[i].Data)
		}
	}
	return es
}

// appendStart is AppendStart of b, checked (batch.CheckFrame) first; a
// batch that fails the check is handed over as the zero batch.Checked.
func appendStart(l *Log, b []byte) (batch.Info, func() error, error) {
	c, _ := batch.CheckFrame(b)
	info, w, err := l.AppendStart(c)
	return info, w.Wait, err
}
