package log

import (
	"testing"

	"github.com/logd/logd/internal/batch"
)

func TestQuickSmoke(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		b := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{{Timestamp: int64(i), Value: []byte("hello world")}})
		info, err := l.Append(b)
		if err != nil || info.BaseOffset != int64(i) {
			t.Fatal(info, err)
		}
	}
	out, err := l.Read(50, 1)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := batch.Verify(out)
	if info.BaseOffset != 50 {
		t.Fatal(info)
	}
	t.Log(len(l.Segments()), l.HighWatermark())
	l.Close()
	l, err = Open(dir, Options{SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", l.Recovery())
	off, err := l.OffsetForTime(77)
	if off != 77 || err != nil {
		t.Fatal(off, err)
	}
	e, err := l.Entry(30)
	if err != nil || e.Index != 30 {
		t.Fatal(e, err)
	}
	info, _ = batch.Verify(e.Data)
	if info.BaseOffset != 29 {
		t.Fatal(info)
	}
	l.Close()
}
