package partition

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/fanout/fanouttest"
	"github.com/logd/logd/log"
)

// openFS is the partitions' file system in the open tests. Every log.Open
// starts with MkdirAll of its partition's directory, where the gate, once
// set, lets it in, and stall, once set, is called; a file's Close goes
// through the gate too; files under the partition directory named fail do
// not open (descriptors ran out); and it counts the files open.
type openFS struct {
	log.OSFS
	t     testing.TB
	gate  atomic.Pointer[fanouttest.Gate]
	stall atomic.Pointer[func()]
	fail  atomic.Pointer[string]
	open  atomic.Int64
}

func (f *openFS) MkdirAll(dir string, perm os.FileMode) error {
	if g := f.gate.Load(); g != nil {
		g.Enter(f.t)
		defer g.Leave()
	}
	if s := f.stall.Load(); s != nil {
		(*s)()
	}
	return f.OSFS.MkdirAll(dir, perm)
}

func (f *openFS) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	if p := f.fail.Load(); p != nil && strings.Contains(name, string(filepath.Separator)+*p+string(filepath.Separator)) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.open.Add(1)
	return &countedFile{File: file, fs: f}, nil
}

type countedFile struct {
	log.File
	fs   *openFS
	once sync.Once
}

func (c *countedFile) Close() error {
	if g := c.fs.gate.Load(); g != nil {
		g.Enter(c.fs.t)
		defer g.Leave()
	}
	c.once.Do(func() { c.fs.open.Add(-1) })
	return c.File.Close()
}

func openDB(t *testing.T, dir string) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openOn(dir string, db *pebble.DB, fs *openFS) (*Topics, error) {
	return Open(Options{DataDir: dir, DB: db, LogOptions: func(TopicConfig) log.Options { return log.Options{FS: fs} }})
}

// mustOpenOn opens Topics in dir on fs, closed when the test ends.
func mustOpenOn(t *testing.T, dir string, fs *openFS) *Topics {
	t.Helper()
	tp, err := openOn(dir, openDB(t, dir), fs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp
}

// createTopics creates topics of n partitions each, named names.
func createTopics(t *testing.T, tp *Topics, n int32, names ...string) {
	t.Helper()
	for _, name := range names {
		c := DefaultConfig(name)
		c.Partitions = n
		if _, err := tp.Create(c); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpensRunConcurrently: a create, an add and a restart open their
// partitions' logs openParallel at once, never more (issue 19: opened
// one after the other, 10,000 partitions took a node minutes). Opened one
// after the other, the gate never has openParallel inside and the test
// fails after fanouttest.HangGuard.
func TestOpensRunConcurrently(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(t *testing.T, tp *Topics)                                        // before the gate is set
		run  func(t *testing.T, dir string, db *pebble.DB, tp *Topics, fs *openFS) // the opens gated
	}{
		{"create", func(*testing.T, *Topics) {}, func(t *testing.T, _ string, _ *pebble.DB, tp *Topics, _ *openFS) {
			createTopics(t, tp, 3*openParallel, "t")
		}},
		{"add partitions", func(t *testing.T, tp *Topics) { createTopics(t, tp, 2, "t") },
			func(t *testing.T, _ string, _ *pebble.DB, tp *Topics, _ *openFS) {
				if _, err := tp.AddPartitions("t", 2+3*openParallel); err != nil {
					t.Fatal(err)
				}
			}},
		// Topics smaller than the bound: only one fan-out over every
		// topic's partitions has openParallel opens at once.
		{"restart", func(t *testing.T, tp *Topics) {
			createTopics(t, tp, openParallel/2, "a", "b", "c", "d")
			if err := tp.Close(); err != nil {
				t.Fatal(err)
			}
		},
			func(t *testing.T, dir string, db *pebble.DB, _ *Topics, fs *openFS) {
				again, err := openOn(dir, db, fs)
				if err != nil {
					t.Fatal(err)
				}
				if err := again.Close(); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDB(t, dir)
			fs := &openFS{t: t}
			tp, err := openOn(dir, db, fs)
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Close()
			tc.prep(t, tp)
			g := fanouttest.NewGate(openParallel)
			fs.gate.Store(g)
			tc.run(t, dir, db, tp, fs)
			if g.Max() > openParallel {
				t.Errorf("%d opens at once, bound %d", g.Max(), openParallel)
			}
		})
	}
}

// TestFailedOpenLeavesNothingOpen: when a partition in the middle fails
// to open, the error names it and its cause, no log stays open, a create
// or add stores nothing and leaves no directory, and a restart loses
// nothing (the next open has every record).
func TestFailedOpenLeavesNothingOpen(t *testing.T) {
	const n = 3 * openParallel
	check := func(t *testing.T, err error, fs *openFS, open int64, failed string) {
		t.Helper()
		if !errors.Is(err, syscall.EMFILE) || !strings.Contains(err.Error(), "partition "+failed+":") {
			t.Errorf("error %v: want partition %s's, too many open files", err, failed)
		}
		if got := fs.open.Load(); got != open {
			t.Errorf("%d files open after the failure, want %d: partitions left open", got, open)
		}
	}
	onlyDirs := func(t *testing.T, dir string, want ...string) {
		t.Helper()
		ents, _ := os.ReadDir(filepath.Join(dir, "partitions"))
		for _, e := range ents {
			if !strings.Contains(strings.Join(want, " ")+" ", e.Name()+" ") {
				t.Errorf("left behind: %s", e.Name())
			}
		}
	}
	failed := fmt.Sprintf("t-%d", n/2)

	t.Run("create", func(t *testing.T) {
		dir := t.TempDir()
		fs := &openFS{t: t}
		fs.fail.Store(&failed)
		tp := mustOpenOn(t, dir, fs)
		c := DefaultConfig("t")
		c.Partitions = n
		_, err := tp.Create(c)
		check(t, err, fs, 0, failed)
		if _, err := tp.Config("t"); !errors.Is(err, ErrTopicNotFound) {
			t.Errorf("after a failed create: %v, want ErrTopicNotFound", err)
		}
		onlyDirs(t, dir)
	})

	t.Run("add partitions", func(t *testing.T) {
		dir := t.TempDir()
		fs := &openFS{t: t}
		tp := mustOpenOn(t, dir, fs)
		createTopics(t, tp, 2, "t")
		before := fs.open.Load()
		fs.fail.Store(&failed)
		_, err := tp.AddPartitions("t", n)
		check(t, err, fs, before, failed)
		if c, _ := tp.Config("t"); c.Partitions != 2 {
			t.Errorf("%d partitions after a failed add, want 2", c.Partitions)
		}
		onlyDirs(t, dir, "t-0", "t-1")
	})

	t.Run("restart", func(t *testing.T) {
		dir := t.TempDir()
		db := openDB(t, dir)
		fs := &openFS{t: t}
		tp, err := openOn(dir, db, fs)
		if err != nil {
			t.Fatal(err)
		}
		createTopics(t, tp, n, "t")
		for i := range int32(n) {
			p, _ := tp.Partition("t", i)
			appendOne(t, p, batch.NoProducer, 1)
		}
		if err := tp.Close(); err != nil {
			t.Fatal(err)
		}
		fs.fail.Store(&failed)
		_, err = openOn(dir, db, fs)
		check(t, err, fs, 0, failed)

		fs.fail.Store(nil)
		tp, err = openOn(dir, db, fs)
		if err != nil {
			t.Fatal(err)
		}
		defer tp.Close()
		_, ps, _ := tp.Partitions("t")
		for _, p := range ps {
			if hw := p.Log.HighWatermark(); hw != 1 {
				t.Errorf("partition %s: high watermark %d after the failed open, want 1", p.Name(), hw)
			}
		}
		if len(ps) != n {
			t.Errorf("%d partitions open, want %d", len(ps), n)
		}
	})
}

// TestReadersDoNotWaitForACreate: while a create opens its logs, the
// other topics' readers (a produce or fetch looks its partition up) are
// answered; the create's disk work holds no lock they take. With the
// create holding the readers' lock, they wait until it ends, and the test
// fails after fanouttest.HangGuard.
func TestReadersDoNotWaitForACreate(t *testing.T) {
	dir := t.TempDir()
	fs := &openFS{t: t}
	tp := mustOpenOn(t, dir, fs)
	createTopics(t, tp, 1, "old")
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	stall := func() { once.Do(func() { close(inside) }); <-release }
	fs.stall.Store(&stall)
	created := make(chan error, 1)
	go func() {
		c := DefaultConfig("new")
		c.Partitions = 4
		_, err := tp.Create(c)
		created <- err
	}()
	<-inside
	read := make(chan error, 1)
	go func() {
		_, err := tp.Partition("old", 0)
		tp.List()
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(fanouttest.HangGuard):
		t.Error("a reader of another topic waited for the create's disk work")
	}
	close(release)
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if _, err := tp.Partition("new", 3); err != nil {
		t.Error(err)
	}
}

// TestCloseClosesConcurrently: Close closes the partitions' logs
// openParallel at once, never more. One after the other, the gate never
// has openParallel inside and the test fails after fanouttest.HangGuard.
func TestCloseClosesConcurrently(t *testing.T) {
	dir := t.TempDir()
	fs := &openFS{t: t}
	tp, err := openOn(dir, openDB(t, dir), fs)
	if err != nil {
		t.Fatal(err)
	}
	createTopics(t, tp, openParallel, "a", "b")
	g := fanouttest.NewGate(openParallel)
	fs.gate.Store(g)
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if g.Max() > openParallel {
		t.Errorf("%d files closing at once, bound %d", g.Max(), openParallel)
	}
	if n := fs.open.Load(); n != 0 {
		t.Errorf("%d files open after Close", n)
	}
}
