package log

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/logd/logd/internal/batch"
)

// countCRCs counts the CRC computations of b's batch (by the address of
// its first byte) until the test ends.
func countCRCs(t *testing.T, bs ...[]byte) *atomic.Int32 {
	var n atomic.Int32
	batch.SetChecksumHook(func(x []byte) {
		for _, b := range bs {
			if &x[0] == &b[0] {
				n.Add(1)
			}
		}
	})
	t.Cleanup(func() { batch.SetChecksumHook(nil) })
	return &n
}

// The log takes a checked batch as it is: AppendStart and AppendEntries
// compute no CRC (whoever made the batch.Checked did), stamp the offsets
// and the term in the caller's bytes, and refuse the zero batch.Checked.
func TestAppendTakesCheckedBatches(t *testing.T) {
	l := mustOpen(t, newFaultFS(), Options{})
	defer l.Close()
	one, two := testBatch(2, 0, 10), testBatch(3, 0, 10)
	c1, err := batch.CheckFrame(one)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := batch.CheckFrame(two)
	if err != nil {
		t.Fatal(err)
	}
	n := countCRCs(t, one, two)
	info, w, err := l.AppendStart(c1)
	if err != nil || w.Wait() != nil || info.BaseOffset != 0 {
		t.Fatalf("AppendStart: %+v, %v", info, err)
	}
	if err := l.AppendEntries([]Entry{{Index: 2, Term: 5, Kind: KindBatch, Batch: c2}}); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("the log computed %d CRCs of checked batches, want 0", got)
	}
	if h, _ := batch.ParseHeader(two); h.BaseOffset != 2 || h.LeaderEpoch != 5 {
		t.Fatalf("caller's copy: base offset %d epoch %d, want 2 and 5", h.BaseOffset, h.LeaderEpoch)
	}
	if _, _, err := l.AppendStart(batch.Checked{}); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("AppendStart of no batch: %v, want ErrInvalidBatch", err)
	}
	if err := l.AppendEntries([]Entry{{Index: 3, Term: 5, Kind: KindBatch, Data: testBatch(1, 0, 10)}}); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("AppendEntries of a batch entry with Data only: %v, want ErrInvalidBatch", err)
	}
	if got, _ := l.Read(0, 1<<20); len(got) != len(one)+len(two) {
		t.Fatalf("read %d bytes, want %d", len(got), len(one)+len(two))
	}
}
