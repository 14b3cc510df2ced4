package log

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGoldenFormat pins the on-disk format: a small log written with a
// fixed clock must match testdata/golden byte for byte (go test -update
// rewrites it after a deliberate format change).
func TestGoldenFormat(t *testing.T) {
	fs := newFaultFS()
	now := time.Unix(1_700_000_000, 0).UTC()
	l := mustOpen(t, fs, Options{Now: func() time.Time { return now }, IndexIntervalBytes: 64})
	mustAppend(t, l, testBatch(2, 1_700_000_000_000, 8))
	if err := l.AppendEntries(frames([]Entry{{Index: 2, Term: 4, Kind: 1, Data: []byte("raft configuration")}})); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendEntries(frames([]Entry{{Index: 3, Term: 4, Kind: KindBatch, Data: testBatch(1, 1_700_000_000_500, 8)}})); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(1, 1_700_000_001_000, 8))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range fs.names() {
		got := fs.bytes(name)
		golden := filepath.Join("testdata", "golden", filepath.Base(name))
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -run Golden -update after a deliberate format change)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n got %x\nwant %x", name, golden, got, want)
		}
	}
	// And the golden files open as a log.
	gfs := newFaultFS()
	entries, _ := os.ReadDir(filepath.Join("testdata", "golden"))
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join("testdata", "golden", e.Name()))
		gfs.setBytes(filepath.Join(testDir, e.Name()), b)
	}
	g := mustOpen(t, gfs, Options{})
	defer g.Close()
	if g.NextOffset() != 4 || g.LastIndex() != 4 || g.Recovery().RebuiltIndexes != 0 {
		t.Fatalf("golden log: next %d last index %d %+v", g.NextOffset(), g.LastIndex(), g.Recovery())
	}
	readAll(t, g, 0)
}
