package log

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
)

// fillMixed appends n batches of per records each, keys cycling over
// k0..k(keys-1), value "v<offset>" ("" for a tombstone every tombEvery-th
// record when tombEvery > 0), timestamp ts0+offset. Every odd batch is an
// idempotent producer's (id 7, epoch 2, sequences in order).
func fillMixed(t *testing.T, l *Log, n, per, keys, tombEvery int, ts0 int64) {
	t.Helper()
	seq := int32(0)
	for range n {
		off := l.NextOffset()
		recs := make([]batch.Record, per)
		for j := range recs {
			o := off + int64(j)
			recs[j] = batch.Record{Timestamp: ts0 + o, Key: fmt.Appendf(nil, "k%d", o%int64(keys)), Value: fmt.Appendf(nil, "v%d", o)}
			if tombEvery > 0 && o%int64(tombEvery) == int64(tombEvery-1) {
				recs[j].Value = nil
			}
		}
		p := batch.NoProducer
		if off/int64(per)%2 == 1 {
			p = batch.Producer{ID: 7, Epoch: 2, Sequence: seq}
			seq += int32(per)
		}
		mustAppend(t, l, batch.Encode(nil, 0, p, recs))
	}
}

// readInfos reads every batch from the log start to the high watermark,
// empty ones too, and returns their headers and records.
func readInfos(t *testing.T, l *Log) ([]batch.Info, []batch.Record) {
	t.Helper()
	var infos []batch.Info
	var recs []batch.Record
	off := l.StartOffset()
	for off < l.HighWatermark() {
		b, err := l.Read(off, 1<<20)
		if err != nil || len(b) == 0 {
			t.Fatalf("read %d: %d bytes, %v", off, len(b), err)
		}
		err = batch.Split(b, func(raw []byte, _ batch.Info) error {
			info, rs, err := batch.Decode(raw, off)
			if err != nil {
				return err
			}
			if info.NextOffset() <= off {
				return fmt.Errorf("batch %d..%d read at %d", info.BaseOffset, info.NextOffset(), off)
			}
			infos = append(infos, info)
			recs = append(recs, rs...)
			off = info.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
	}
	return infos, recs
}

// producerBatches is the producer fields and offsets of the idempotent
// batches among infos: what a partition rebuilds its dedup state from.
func producerBatches(infos []batch.Info) []string {
	var out []string
	for _, i := range infos {
		if i.ProducerID >= 0 {
			out = append(out, fmt.Sprintf("%d..%d p%d/%d seq %d", i.BaseOffset, i.NextOffset(), i.ProducerID, i.ProducerEpoch, i.FirstSequence))
		}
	}
	return out
}

// Compaction removes records, not batches: of batches holding several
// keys, only each key's newest record stays (at its offset, with its
// timestamp); an idempotent producer's batches all stay, with their
// offsets and producer fields, empty when nothing of them is kept.
func TestCompactPerRecord(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 2048}
	l := mustOpen(t, fs, opts)
	fillMixed(t, l, 60, 4, 7, 0, 1000)
	beforeInfos, before := readInfos(t, l)
	res, err := l.Compact(CompactOptions{Below: l.HighWatermark()})
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsRemoved == 0 || res.CleanedTo != activeBase(l) {
		t.Fatalf("result %+v: want records removed, clean up to the active segment at %d", res, activeBase(l))
	}
	infos, recs := readInfos(t, l)
	checkCompacted(t, recs, activeBase(l), l.HighWatermark())
	for _, r := range recs {
		i := slices.IndexFunc(before, func(o batch.Record) bool { return o.Offset == r.Offset })
		if i < 0 || before[i].Timestamp != r.Timestamp || !bytes.Equal(before[i].Key, r.Key) {
			t.Fatalf("offset %d: %+v, before the clean %+v", r.Offset, r, before[i])
		}
	}
	if got, want := producerBatches(infos), producerBatches(beforeInfos); !slices.Equal(got, want) {
		t.Fatalf("idempotent batches after the clean:\n%q\nbefore:\n%q", got, want)
	}
	empty := 0
	for _, i := range infos {
		if i.NumRecords == 0 {
			empty++
		}
	}
	if empty == 0 {
		t.Fatal("no idempotent batch left empty: the test does not cover them")
	}
	l.Close()
	l = mustOpen(t, fs.crash(), opts)
	defer l.Close()
	if again, _ := readInfos(t, l); !slices.Equal(producerBatches(again), producerBatches(beforeInfos)) {
		t.Fatal("idempotent batches changed across a reopen")
	}
}

// The clean point survives a restart: the reopened log is not dirty and
// a clean reads nothing; a cleaner file that does not check out is
// ignored (the log is cleaned again, the same).
func TestCompactCleanPointSurvivesRestart(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 1024}
	l := mustOpen(t, fs, opts)
	fillKeys(t, l, 200, 7, 1000)
	copts := CompactOptions{Below: 1 << 62}
	if _, err := l.Compact(copts); err != nil {
		t.Fatal(err)
	}
	d := l.Dirty(copts)
	if d.DirtyBytes != 0 || d.CleanableBytes == 0 {
		t.Fatalf("after a clean: %+v", d)
	}
	_, recs := readInfos(t, l)
	l.Close()
	img := fs.crash()
	l = mustOpen(t, img.clone(), opts)
	if got := l.Dirty(copts); got.DirtyBytes != 0 || got.CleanedTo != d.CleanedTo {
		t.Fatalf("after a restart: %+v, before it %+v", got, d)
	}
	res, err := l.Compact(copts)
	if err != nil || res.Read != 0 || res.Segments != 0 {
		t.Fatalf("a clean after the restart: %+v %v, want nothing read", res, err)
	}
	l.Close()
	bad := img.clone()
	bad.setBytes(filepath.Join(testDir, cleanerFile), []byte("LDCL garbage"))
	l = mustOpen(t, bad, opts)
	defer l.Close()
	if got := l.Dirty(copts); got.DirtyBytes != got.CleanableBytes || got.DirtyBytes == 0 {
		t.Fatalf("with a damaged cleaner file: %+v, want everything dirty", got)
	}
	if _, err := l.Compact(copts); err != nil {
		t.Fatal(err)
	}
	if _, again := readInfos(t, l); !slices.EqualFunc(again, recs, sameRecord) {
		t.Fatalf("cleaned again: %d records, %d the first time", len(again), len(recs))
	}
}

// latest is, for every key, the offset and value of its newest record.
func latest(recs []batch.Record) map[string]batch.Record {
	m := map[string]batch.Record{}
	for _, r := range recs {
		m[string(r.Key)] = r
	}
	return m
}

// A crash before any file system operation of a Compact (kill -9: only
// what was synced survives) leaves every segment file the old one or the
// new one, byte for byte, never a mix; the reopened log holds every key's
// newest record, and reads nothing that was not written; a Compact after
// it ends where an uninterrupted one does.
func TestCompactCrashAtEveryOperation(t *testing.T) {
	opts := Options{SegmentBytes: 1024}
	base := newFaultFS()
	l := mustOpen(t, base, opts)
	fillMixed(t, l, 45, 3, 5, 4, 1000)
	// k3 and k4 end with a tombstone; the later records are of k0..k2.
	mustAppend(t, l, kvBatch([]byte("k3"), nil, 1500))
	mustAppend(t, l, kvBatch([]byte("k4"), nil, 1501))
	fillMixed(t, l, 10, 3, 3, 0, 1600)
	l.Close()
	copts := func(now int64) CompactOptions {
		return CompactOptions{Below: 1 << 62, Now: time.UnixMilli(now), DeleteRetention: time.Second}
	}
	// Two cleans: the first stamps the segments, the second, past the
	// horizon, removes tombstones; the crash comes in the second.
	first := base.clone()
	l = mustOpen(t, first, opts)
	if _, err := l.Compact(copts(10_000)); err != nil {
		t.Fatal(err)
	}
	fillMixed(t, l, 15, 3, 3, 4, 2000)
	_, orig := readInfos(t, l)
	want := latest(orig)
	l.Close()
	done := first.clone()
	l = mustOpen(t, done, opts)
	if _, err := l.Compact(copts(20_000)); err != nil {
		t.Fatal(err)
	}
	_, final := readInfos(t, l)
	l.Close()
	if tombs := func(rs []batch.Record) int {
		n := 0
		for _, r := range rs {
			if r.Value == nil {
				n++
			}
		}
		return n
	}; tombs(final) >= tombs(orig) || tombs(final) == 0 {
		t.Fatalf("%d tombstones before the clean past the horizon, %d after: the test needs some removed, some kept", tombs(orig), tombs(final))
	}
	if m := latest(final); m["k3"].Key != nil || m["k4"].Key != nil {
		t.Fatalf("k3 and k4's tombstones are past their horizon, yet read %+v, %+v", m["k3"], m["k4"])
	}
	oldFiles, newFiles := segmentFiles(first), segmentFiles(done)
	for k := 0; ; k++ {
		run := first.clone()
		var crashed *faultFS
		n := 0
		run.before = func(string, string) {
			if n == k {
				crashed = run.crash()
			}
			n++
		}
		l := mustOpen(t, run, opts)
		n, crashed = 0, nil // opening is not under test
		if _, err := l.Compact(copts(20_000)); err != nil {
			t.Fatalf("crash before operation %d: compact: %v", k, err)
		}
		l.Close()
		if crashed == nil {
			t.Logf("%d file system operations", k)
			break // the Compact had fewer operations
		}
		for name, b := range segmentFiles(crashed) {
			if !bytes.Equal(b, oldFiles[name]) && !bytes.Equal(b, newFiles[name]) {
				t.Fatalf("crash before operation %d: %s is neither the old segment nor the new one", k, name)
			}
		}
		l = mustOpen(t, crashed, opts)
		_, got := readInfos(t, l)
		checkLatest(t, k, got, orig, want)
		if _, err := l.Compact(copts(20_000)); err != nil {
			t.Fatalf("crash before operation %d: compact after: %v", k, err)
		}
		if _, again := readInfos(t, l); !slices.EqualFunc(again, final, sameRecord) {
			t.Fatalf("crash before operation %d: a clean after the crash leaves %d records, an uninterrupted one %d", k, len(again), len(final))
		}
		l.Close()
	}
}

// checkLatest checks what a log reads after a crash: nothing that was
// not written, at its offset, and every key's newest record (a tombstone
// may be gone: its key then reads no value at all).
func checkLatest(t *testing.T, k int, got, orig []batch.Record, want map[string]batch.Record) {
	t.Helper()
	for _, r := range got {
		i := slices.IndexFunc(orig, func(o batch.Record) bool { return o.Offset == r.Offset })
		if i < 0 || !sameRecord(orig[i], r) || orig[i].Timestamp != r.Timestamp {
			t.Fatalf("crash before operation %d: offset %d read, not as written", k, r.Offset)
		}
	}
	have := latest(got)
	for key, w := range want {
		h, ok := have[key]
		switch {
		case !ok && w.Value == nil:
		case !ok || h.Offset != w.Offset:
			t.Fatalf("crash before operation %d: key %s reads %+v, its newest record is at %d", k, key, h, w.Offset)
		}
	}
}

// segmentFiles is every segment file's bytes by name.
func segmentFiles(f *faultFS) map[string][]byte {
	out := map[string][]byte{}
	for _, name := range f.names() {
		if filepath.Ext(name) == logSuffix {
			out[name] = f.bytes(name)
		}
	}
	return out
}

// A cut below the clean point (a replica's reset) forgets the cleaner's
// state, durably: records written again at those offsets are dirty, also
// after a crash and reopen.
func TestCompactTruncateBelowCleanPoint(t *testing.T) {
	fs := newFaultFS()
	opts := Options{SegmentBytes: 1024}
	l := mustOpen(t, fs, opts)
	fillKeys(t, l, 200, 7, 1000)
	copts := CompactOptions{Below: 1 << 62}
	if _, err := l.Compact(copts); err != nil {
		t.Fatal(err)
	}
	cleaned := l.Dirty(copts).CleanedTo
	if err := l.TruncateFrom(cleaned / 2); err != nil {
		t.Fatal(err)
	}
	fillKeys(t, l, 200, 7, 5000)
	if d := l.Dirty(copts); d.CleanedTo >= cleaned || d.DirtyBytes == 0 {
		t.Fatalf("after a cut at %d below the clean point %d: %+v", cleaned/2, cleaned, d)
	}
	l.Close()
	l = mustOpen(t, fs.crash(), opts)
	defer l.Close()
	if d := l.Dirty(copts); d.CleanedTo >= cleaned || d.DirtyBytes == 0 {
		t.Fatalf("reopened after a cut at %d below the clean point %d: %+v", cleaned/2, cleaned, d)
	}
}
