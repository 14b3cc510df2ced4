package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

// txnRec is a batch of one record, key k and value v, of producer pid in
// a transaction.
func txnRec(pid int64, seq int32, k, v string, ts int64) []byte {
	b := batch.Encode(nil, 0, batch.Producer{ID: pid, Sequence: seq}, []batch.Record{{Timestamp: ts, Key: []byte(k), Value: []byte(v)}})
	binary.BigEndian.PutUint16(b[21:], batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	return b
}

func txnMarker(pid int64, commit bool, ts int64) []byte {
	return batch.EncodeControl(nil, batch.Producer{ID: pid}, commit, 0, ts)
}

// txnView describes the batches below offset below: "O marker pP",
// "O txn pP [k=v ...]" or "O [k=v ...]", and checks that every
// transactional batch left has its transaction's marker after it.
func txnView(t *testing.T, l *Log, below int64) []string {
	t.Helper()
	infos, recs := readInfos(t, l)
	var out []string
	for _, info := range infos {
		if info.BaseOffset >= below {
			break
		}
		var kv []string
		for _, r := range recs {
			if r.Offset >= info.BaseOffset && r.Offset < info.NextOffset() {
				kv = append(kv, fmt.Sprintf("%s=%s", r.Key, r.Value))
			}
		}
		switch {
		case info.IsControl():
			out = append(out, fmt.Sprintf("%d marker p%d", info.BaseOffset, info.ProducerID))
		case info.IsTransactional():
			out = append(out, fmt.Sprintf("%d txn p%d %v", info.BaseOffset, info.ProducerID, kv))
		default:
			out = append(out, fmt.Sprintf("%d %v", info.BaseOffset, kv))
		}
	}
	for i, info := range infos {
		if info.IsTransactional() && !info.IsControl() && !slices.ContainsFunc(infos[i:], func(m batch.Info) bool {
			return m.IsControl() && m.ProducerID == info.ProducerID
		}) {
			t.Fatalf("transactional batch at %d of producer %d has no marker after it: %q", info.BaseOffset, info.ProducerID, out)
		}
	}
	return out
}

// An aborted transaction's record does not hide an older committed record
// of its key and is removed at the first clean (its batch stays, empty,
// until its segment's horizon, with its marker); past the horizon the
// batch goes, its ABORT marker stays (the aborted index still lists the
// transaction). A committed transaction's marker stays while a record of
// it is left, and goes, after its horizon, once the record was replaced.
// A record whose key looks like a marker's is a record.
func TestCompactAbortedTransaction(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 256}
	l := mustOpen(t, fs, opts)
	defer func() { l.Close() }()
	mustAppend(t, l, kvBatch([]byte("k"), []byte("c0"), 1000))              // 0
	mustAppend(t, l, txnRec(7, 0, "k", "a1", 1001))                         // 1: aborted
	mustAppend(t, l, txnMarker(7, false, 1002))                             // 2
	mustAppend(t, l, txnRec(8, 0, "j", "j1", 1003))                         // 3: committed
	mustAppend(t, l, txnMarker(8, true, 1004))                              // 4
	mustAppend(t, l, kvBatch([]byte{0, 0, 0, 1}, []byte("ctl-like"), 1005)) // 5
	mustAppend(t, l, txnMarker(8, true, 1006))                              // 6: ends nothing
	mustRoll(t, l)
	fillKeys(t, l, 12, 1, 2000)
	aborted := []AbortedSpan{{ProducerID: 7, FirstOffset: 1, LastOffset: 2}}
	// A segment the clean left without records is as old as its file:
	// the clock runs from now.
	t0 := time.Now()
	compact := func(below int64, now int64) {
		t.Helper()
		if _, err := l.Compact(CompactOptions{Below: below, Aborted: aborted, Now: t0.Add(time.Duration(now) * time.Millisecond), DeleteRetention: 50 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(below int64, want ...string) {
		t.Helper()
		if got := txnView(t, l, below); !slices.Equal(got, want) {
			t.Fatalf("kept\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	compact(7, 100_000)
	check(7, "0 [k=c0]", "1 txn p7 []", "2 marker p7", "3 txn p8 [j=j1]", "4 marker p8",
		"5 [\x00\x00\x00\x01=ctl-like]", "6 marker p8")
	// Past the horizon (nothing dirty: the markers alone make the pass).
	if d := l.Dirty(CompactOptions{Below: 7, Now: t0.Add(160 * time.Second), DeleteRetention: 50 * time.Second}); !d.HorizonDue || d.DirtyBytes != 0 {
		t.Fatalf("dirty stats %+v: want only the horizon due", d)
	}
	compact(7, 160_000)
	check(7, "0 [k=c0]", "2 marker p7", "3 txn p8 [j=j1]", "4 marker p8", "5 [\x00\x00\x00\x01=ctl-like]")
	// j1 replaced: its batch and its marker go.
	next := l.NextOffset()
	mustAppend(t, l, kvBatch([]byte("j"), []byte("j2"), 3000))
	mustRoll(t, l)
	fillKeys(t, l, 12, 1, 4000)
	compact(next+1, 220_000)
	check(next+1, "0 [k=c0]", "2 marker p7", "5 [\x00\x00\x00\x01=ctl-like]", fmt.Sprintf("%d [k0=v11]", next-1), fmt.Sprintf("%d [j=j2]", next))
	// All of it survives a reopen.
	l.Close()
	l = mustOpen(t, fs.crash(), opts)
	check(next+1, "0 [k=c0]", "2 marker p7", "5 [\x00\x00\x00\x01=ctl-like]", fmt.Sprintf("%d [k0=v11]", next-1), fmt.Sprintf("%d [j=j2]", next))
}

// The records at or above Below (the caller's last stable offset: an
// open transaction's first record) are neither read into the key map nor
// removed: an older record of the key stays, and so does the open one.
func TestCompactKeepsOpenTransaction(t *testing.T) {
	l := mustOpen(t, newFaultFS(), Options{SegmentBytes: 256})
	defer l.Close()
	mustAppend(t, l, kvBatch([]byte("k"), []byte("c0"), 1000))
	mustAppend(t, l, kvBatch([]byte("x"), []byte("x1"), 1001))
	mustAppend(t, l, kvBatch([]byte("x"), []byte("x2"), 1002))
	lso := l.NextOffset()
	mustRoll(t, l)
	mustAppend(t, l, txnRec(9, 0, "k", "open", 1003))
	mustAppend(t, l, kvBatch([]byte("k"), []byte("c1"), 1004))
	fillKeys(t, l, 12, 1, 2000)
	if _, err := l.Compact(CompactOptions{Below: lso, Now: time.UnixMilli(100_000)}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range readKept(t, l) {
		if string(r.Key) == "k" || string(r.Key) == "x" {
			got = append(got, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value))
		}
	}
	want := []string{"0:k=c0", "2:x=x2", "3:k=open", "4:k=c1"}
	if !slices.Equal(got, want) {
		t.Fatalf("kept %q, want %q", got, want)
	}
}

// A crash at any step of the cleans that remove transactions' batches and
// COMMIT markers leaves no transactional batch without its marker, and
// another clean ends where an uninterrupted one does.
func TestCompactTransactionCrashAtEachStep(t *testing.T) {
	opts := Options{SegmentBytes: 256}
	build := func() (*faultFS, []AbortedSpan, int64) {
		fs := newFaultFS()
		l := mustOpen(t, fs, opts)
		defer l.Close()
		var aborted []AbortedSpan
		for i := range 6 {
			pid := int64(10 + i%2)
			first := mustAppend(t, l, txnRec(pid, int32(i), fmt.Sprintf("k%d", i%3), fmt.Sprintf("v%d", i), 1000)).BaseOffset
			mustAppend(t, l, txnRec(pid, int32(i), fmt.Sprintf("k%d", i%3), fmt.Sprintf("w%d", i), 1000))
			m := mustAppend(t, l, txnMarker(pid, i%2 == 0, 1000)).BaseOffset
			if i%2 == 1 {
				aborted = append(aborted, AbortedSpan{ProducerID: pid, FirstOffset: first, LastOffset: m})
			}
		}
		below := l.NextOffset()
		mustRoll(t, l)
		fillKeys(t, l, 12, 3, 2000) // k0..k2 again: every transaction's records replaced
		below2 := l.NextOffset()
		mustRoll(t, l)
		fillKeys(t, l, 12, 1, 3000)
		if _, err := l.Compact(CompactOptions{Below: below, Aborted: aborted, Now: time.UnixMilli(10_000)}); err != nil {
			t.Fatal(err)
		}
		return fs, aborted, below2
	}
	errCrash := errors.New("crash")
	for _, step := range []string{"written", "renamed", "dirsynced", "stamped"} {
		for nth := 1; nth <= 4; nth++ {
			fs, aborted, below := build()
			l := mustOpen(t, fs, opts)
			n := 0
			_, err := l.Compact(CompactOptions{Below: below, Aborted: aborted, Now: time.Now().Add(time.Minute), Step: func(s string) error {
				if s == step {
					if n++; n == nth {
						return errCrash
					}
				}
				return nil
			}})
			l.Close()
			if err != nil && !errors.Is(err, errCrash) {
				t.Fatal(err)
			}
			l = mustOpen(t, fs.crash(), opts)
			txnView(t, l, below) // fails on a batch without its marker
			if _, err := l.Compact(CompactOptions{Below: below, Aborted: aborted, Now: time.Now().Add(2 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if v := txnView(t, l, below); slices.ContainsFunc(v, func(s string) bool {
				return strings.Contains(s, "txn p1") || strings.Contains(s, "marker p10")
			}) || !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, "marker p11") }) {
				t.Fatalf("crash at %s #%d: after the horizon, want no transactional batch, no COMMIT marker and the ABORT markers: %q", step, nth, v)
			}
			l.Close()
		}
	}
}

func mustRoll(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
}
