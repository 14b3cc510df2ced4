package partition

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// gatedFS is the operating system's file system whose fsyncs can be held
// (each announces itself on entered and waits for the gate to open) and
// failed.
type gatedFS struct {
	log.OSFS
	mu      sync.Mutex
	gate    chan struct{} // nil: fsyncs pass
	err     error
	entered chan struct{}
}

type gatedFile struct {
	log.File
	fs *gatedFS
}

func (g *gatedFS) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	f, err := g.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return gatedFile{f, g}, nil
}

func (f gatedFile) Sync() error {
	f.fs.mu.Lock()
	gate := f.fs.gate
	f.fs.mu.Unlock()
	if gate != nil {
		f.fs.entered <- struct{}{}
		<-gate
	}
	f.fs.mu.Lock()
	err := f.fs.err
	f.fs.mu.Unlock()
	if err != nil {
		return err
	}
	return f.File.Sync()
}

// hold makes the next fsyncs wait; the returned func lets them through.
func (g *gatedFS) hold() (release func()) {
	gate := make(chan struct{})
	g.mu.Lock()
	g.gate = gate
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.gate = nil
			g.mu.Unlock()
			close(gate)
		})
	}
}

func (g *gatedFS) setErr(err error) { g.mu.Lock(); g.err = err; g.mu.Unlock() }

func openLocal(t *testing.T) (*Partition, *gatedFS) {
	t.Helper()
	fs := &gatedFS{entered: make(chan struct{}, 100)}
	l, err := log.Open(t.TempDir(), log.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return newPartition("t", 0, l), fs
}

// producerBatch encodes n records of producer 7 from sequence seq.
func producerBatch(t *testing.T, epoch int16, seq int32, n int) batch.Checked {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{Timestamp: 1, Value: fmt.Appendf(nil, "seq %d", int(seq)+i)}
	}
	c, err := batch.Validate(batch.Encode(nil, 0, batch.Producer{ID: 7, Epoch: epoch, Sequence: seq}, recs))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startLocalBatch starts a batch with StartAppend, failing the test if
// the start waits for an fsync.
func startLocalBatch(t *testing.T, p *Partition, epoch int16, seq int32, n int) started {
	t.Helper()
	c := producerBatch(t, epoch, seq, n)
	ch := make(chan started, 1)
	go func() {
		wait, err := p.StartAppend(c)
		ch <- started{wait, err}
	}()
	select {
	case s := <-ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatalf("StartAppend of sequence %d waited for an fsync", seq)
		return started{}
	}
}

// TestStartAppendPipelines: on a single node a producer's batches are
// written while the first one's fsync runs; the sequence check covers the
// ones not yet durable (a gap is refused, a retry is answered by its
// original, unwritten), and each is acknowledged only once durable.
func TestStartAppendPipelines(t *testing.T) {
	p, fs := openLocal(t)
	release := fs.hold()
	defer release()
	a := startLocalBatch(t, p, 0, 0, 2)
	<-fs.entered // the first fsync is held
	b := startLocalBatch(t, p, 0, 2, 2)
	c := startLocalBatch(t, p, 0, 4, 2)
	for i, s := range []started{a, b, c} {
		if s.err != nil {
			t.Fatalf("batch %d: %v", i, s.err)
		}
	}
	if next := p.Log.NextOffset(); next != 6 {
		t.Fatalf("next offset %d, want 6: the three batches written during the fsync", next)
	}
	if s := startLocalBatch(t, p, 0, 7, 1); s.err == nil {
		if _, err := s.result(t); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("sequence 7 after pending 0..5: %v, want ErrOutOfOrderSequence", err)
		}
	}
	retryB := startLocalBatch(t, p, 0, 2, 2)
	if retryB.err != nil || p.Log.NextOffset() != 6 {
		t.Fatalf("retry of a pending batch: %v, next offset %d: want it answered by the original, unwritten", retryB.err, p.Log.NextOffset())
	}
	if !c.blocked() || !a.blocked() {
		t.Fatal("a batch was acknowledged before its fsync")
	}
	if hw := p.Log.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before the fsync", hw)
	}
	release()
	// c first: a and b are Observed before it, in order.
	if r, err := c.result(t); err != nil || r.Duplicate || r.BaseOffset != 4 || r.LastOffset != 5 {
		t.Fatalf("c: %+v, %v", r, err)
	}
	if r, err := retryB.result(t); err != nil || !r.Duplicate || r.BaseOffset != 2 || r.LastOffset != 3 {
		t.Fatalf("retry of pending b: %+v, %v; want duplicate at 2..3", r, err)
	}
	for i, s := range []started{a, b} {
		if r, err := s.result(t); err != nil || r.Duplicate || r.BaseOffset != int64(2*i) {
			t.Fatalf("batch %d: %+v, %v", i, r, err)
		}
	}
	// Retries of durable batches are answered from the remembered ones,
	// with their offsets.
	for i := range 3 {
		if r, err := startLocalBatch(t, p, 0, int32(2*i), 2).result(t); err != nil || !r.Duplicate || r.BaseOffset != int64(2*i) {
			t.Fatalf("retry of durable batch %d: %+v, %v", i, r, err)
		}
	}
	if r, err := startLocalBatch(t, p, 0, 6, 1).result(t); err != nil || r.BaseOffset != 6 {
		t.Fatalf("sequence 6: %+v, %v", r, err)
	}
	if next := p.Log.NextOffset(); next != 7 {
		t.Fatalf("next offset %d, want 7 (no batch written twice)", next)
	}
}

// TestStartAppendFailedFsync: a failed fsync fails the wait of every
// pending batch it was to cover, a retry of one of them gets the
// original's failure, and the producer's pending batches are forgotten.
func TestStartAppendFailedFsync(t *testing.T) {
	p, fs := openLocal(t)
	if _, err := startLocalBatch(t, p, 0, 0, 1).result(t); err != nil {
		t.Fatal(err)
	}
	release := fs.hold()
	defer release()
	a := startLocalBatch(t, p, 0, 1, 1)
	<-fs.entered
	b := startLocalBatch(t, p, 0, 2, 1)
	retryA := startLocalBatch(t, p, 0, 1, 1)
	if a.err != nil || b.err != nil || retryA.err != nil {
		t.Fatalf("starts: %v, %v, %v", a.err, b.err, retryA.err)
	}
	fs.setErr(syscall.EIO)
	release()
	for i, s := range []started{b, retryA, a} {
		if r, err := s.result(t); !errors.Is(err, syscall.EIO) {
			t.Fatalf("wait %d: %+v, %v, want EIO", i, r, err)
		}
	}
	p.mu.Lock()
	n := len(p.producers[7].pending)
	p.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d batches still pending after a failed fsync", n)
	}
	if _, err := startLocalBatch(t, p, 0, 1, 1).result(t); !errors.Is(err, syscall.EIO) {
		t.Fatalf("resend after a failed fsync: %v, want the log's failure", err)
	}
	if hw := p.Log.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d, want 1", hw)
	}
}

// TestStartAppendConcurrentProducers: producers pipelining 4 batches each,
// with some batches retried while pending; every sequence lands once, in
// order, acknowledged with the offsets it got. Run with -race.
func TestStartAppendConcurrentProducers(t *testing.T) {
	p, _ := openLocal(t)
	const producers, batches = 4, 60
	var wg sync.WaitGroup
	for id := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type inflight struct {
				seq int32
				a   *Appending
			}
			var window []inflight
			ack := func() bool {
				r, err := window[0].a.Wait(context.Background())
				if err != nil || r.Duplicate {
					t.Errorf("producer %d seq %d: %+v, %v", id, window[0].seq, r, err)
					return false
				}
				window = window[1:]
				return true
			}
			for i := range batches {
				seq := int32(i)
				recs := []batch.Record{{Timestamp: 1, Value: fmt.Appendf(nil, "%d/%d", id, seq)}}
				prod := batch.Producer{ID: int64(id), Epoch: 0, Sequence: seq}
				c, _ := batch.Validate(batch.Encode(nil, 0, prod, recs))
				wait, err := p.StartAppend(c)
				if err != nil {
					t.Error(err)
					return
				}
				window = append(window, inflight{seq, wait})
				if i%7 == 3 { // a retry of a pending (or just durable) batch
					rc, _ := batch.Validate(batch.Encode(nil, 0, prod, recs))
					if _, err := p.StartAppend(rc); err != nil {
						t.Error(err)
						return
					}
				}
				if len(window) == 4 && !ack() {
					return
				}
			}
			for len(window) > 0 && ack() {
			}
		}()
	}
	wg.Wait()
	next := make([]int32, producers)
	for off := int64(0); off < p.Log.HighWatermark(); {
		raw, err := p.Log.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		err = batch.Split(raw, func(_ []byte, in batch.Info) error {
			if in.FirstSequence != next[in.ProducerID] {
				return fmt.Errorf("producer %d: sequence %d at offset %d, want %d", in.ProducerID, in.FirstSequence, in.BaseOffset, next[in.ProducerID])
			}
			next[in.ProducerID]++
			off = in.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for id, n := range next {
		if n != batches {
			t.Fatalf("producer %d: %d batches in the log, want %d", id, n, batches)
		}
	}
}
