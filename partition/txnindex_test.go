package partition

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// openOld opens dir's log with segments created an hour ago, one batch
// per segment, so a reopen scans only the last two (recoverProducers).
func openOld(t *testing.T, dir string) *Partition {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	l, err := log.Open(dir, log.Options{SegmentBytes: 1, Now: func() time.Time { return old }})
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition("t", 0, l)
	if err := p.recoverProducers(); err != nil {
		l.Close()
		t.Fatal(err)
	}
	return p
}

// An aborted transaction stays hidden after a restart that no longer
// scans its segments: the index keeps it, and a damaged index is
// replaced by what the scan found without failing the open.
func TestAbortedTxnOutlivesRescanWindow(t *testing.T) {
	dir := t.TempDir()
	p := openOld(t, dir)
	for _, c := range []batch.Checked{txnBatch(t, 7, 0, 2), marker(t, 7, false)} { // 0-1, 2
		if _, err := p.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 { // 3..7, each in its own segment
		if _, err := p.Append(txnBatch(t, 8, int32(i), 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(marker(t, 8, true)); err != nil {
			t.Fatal(err)
		}
	}
	p.Log.Close()
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 2}}

	q := openOld(t, dir)
	if got := q.Aborted(0, 100); !reflect.DeepEqual(got, want) {
		q.Log.Close()
		t.Fatalf("aborted after reopening: %v, want %v", got, want)
	}
	q.Log.Close()

	// Reopened again (the index was rewritten at the first open).
	q = openOld(t, dir)
	if got := q.Aborted(0, 100); !reflect.DeepEqual(got, want) {
		q.Log.Close()
		t.Fatalf("aborted after the second reopen: %v, want %v", got, want)
	}
	q.Log.Close()

	if err := os.WriteFile(filepath.Join(dir, txnIndexName), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	q = openOld(t, dir)
	defer q.Log.Close()
	if got := q.Aborted(0, 100); len(got) != 0 {
		t.Fatalf("aborted from a damaged index: %v", got)
	}
}

func TestTxnIndexEncoding(t *testing.T) {
	list := []AbortedTxn{{1, 2, 3}, {-1, 1 << 40, 1<<40 + 9}}
	b := encodeTxnIndex(list)
	got, err := decodeTxnIndex(b)
	if err != nil || !reflect.DeepEqual(got, list) {
		t.Fatalf("decoded %v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, b[:len(b)-1], append([]byte("x"), b[1:]...)} {
		if _, err := decodeTxnIndex(bad); err == nil {
			t.Fatalf("decoded damaged %q", bad)
		}
	}
}
