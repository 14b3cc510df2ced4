package partition

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// fakeRaft stands for a replicated path that orders writes as started:
// started is its log of entries in order; apply applies the next one
// (Observe, then Done), fail fails the next ones.
type fakeRaft struct {
	t       *testing.T
	p       *Partition
	next    int64 // next offset
	started []*fakeWrite
	after   []Write // each start's after
	applied int     // entries of started applied or failed
}

type fakeWrite struct {
	info batch.Info
	b    []byte // the batch, for Applied
	done chan struct{}
	res  log.Span
	err  error
}

func (w *fakeWrite) Wait(ctx context.Context) (log.Span, error) {
	select {
	case <-w.done:
		return w.res, w.err
	case <-ctx.Done():
		return log.Span{}, ctx.Err()
	}
}
func (w *fakeWrite) Done() <-chan struct{}     { return w.done }
func (w *fakeWrite) Result() (log.Span, error) { <-w.done; return w.res, w.err }

var errLost = errors.New("leadership lost")

func (f *fakeRaft) start(info batch.Info) func(batch.Checked, Write) (Write, error) {
	return func(c batch.Checked, after Write) (Write, error) {
		f.after = append(f.after, after)
		info.BaseOffset = f.next
		f.next += int64(info.LastOffsetDelta) + 1
		w := &fakeWrite{info: info, b: c.Bytes(), done: make(chan struct{})}
		f.started = append(f.started, w)
		return w, nil
	}
}

// apply applies the next started entry, as Raft's state machine does.
func (f *fakeRaft) apply() {
	w := f.started[f.applied]
	f.applied++
	f.p.Applied(w.info, w.b)
	w.res = log.Span{BaseOffset: w.info.BaseOffset, LastOffset: w.info.LastOffset()}
	close(w.done)
}

// fail fails every started entry not yet applied (a leader stepping down).
func (f *fakeRaft) fail() {
	for ; f.applied < len(f.started); f.applied++ {
		w := f.started[f.applied]
		w.err = errLost
		close(w.done)
	}
}

func info(epoch int16, seq, n int32) batch.Info {
	return batch.Info{ProducerID: 7, ProducerEpoch: epoch, FirstSequence: seq, LastOffsetDelta: n - 1, NumRecords: n}
}

// checkedOf is a batch of in's producer, sequence and record count.
func checkedOf(t *testing.T, in batch.Info) batch.Checked {
	t.Helper()
	recs := make([]batch.Record, in.NumRecords)
	for i := range recs {
		recs[i] = batch.Record{Timestamp: 1, Value: []byte("v")}
	}
	c, err := batch.Validate(batch.Encode(nil, 0, batch.Producer{ID: in.ProducerID, Epoch: in.ProducerEpoch, Sequence: in.FirstSequence}, recs))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type started struct {
	a   *Appending
	err error
}

func (s started) wait(ctx context.Context) (AppendResult, error) { return s.a.Wait(ctx) }

func (f *fakeRaft) send(lead uint64, in batch.Info) started {
	f.t.Helper()
	a, err := f.p.StartAppendVia(checkedOf(f.t, in), lead, f.start(in))
	return started{a, err}
}

func (s started) result(t *testing.T) (AppendResult, error) {
	t.Helper()
	if s.err != nil {
		return AppendResult{}, s.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.wait(ctx)
}

// pendingAnswer reports whether s's answer is still to come.
func (s started) blocked() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := s.wait(ctx)
	return errors.Is(err, context.DeadlineExceeded)
}

func newFake(t *testing.T) *fakeRaft {
	return &fakeRaft{t: t, p: newPartition("t", 0, nil)}
}

func TestPipelinedRetryOfPendingIsNotStartedAgain(t *testing.T) {
	f := newFake(t)
	a := f.send(1, info(0, 0, 2))
	b := f.send(1, info(0, 2, 2))
	c := f.send(1, info(0, 4, 2))
	if len(f.started) != 3 {
		t.Fatalf("%d started, want 3 (pipelined)", len(f.started))
	}
	if f.after[0] != nil || f.after[1] != f.started[0] || f.after[2] != f.started[1] {
		t.Fatalf("started after %v, want nil and each one's predecessor", f.after)
	}
	retryB := f.send(1, info(0, 2, 2))
	if retryB.err != nil || len(f.started) != 3 {
		t.Fatalf("retry of a pending batch: err %v, %d started, want it answered by the original", retryB.err, len(f.started))
	}
	if !retryB.blocked() {
		t.Fatal("the retry of a pending batch was answered before the original")
	}
	f.apply()
	f.apply()
	if r, err := retryB.result(t); err != nil || !r.Duplicate || r.BaseOffset != 2 || r.LastOffset != 3 {
		t.Fatalf("retry of pending b: %+v, %v; want duplicate at 2..3", r, err)
	}
	f.apply()
	for i, s := range []started{a, b, c} {
		if r, err := s.result(t); err != nil || r.Duplicate || r.BaseOffset != int64(2*i) {
			t.Fatalf("batch %d: %+v, %v", i, r, err)
		}
	}
	// A retry of an applied batch is answered from the remembered ones.
	if r, err := f.send(1, info(0, 0, 2)).result(t); err != nil || !r.Duplicate || r.BaseOffset != 0 || len(f.started) != 3 {
		t.Fatalf("retry of applied a: %+v, %v, %d started", r, err, len(f.started))
	}
}

func TestPipelinedGapIsRefused(t *testing.T) {
	f := newFake(t)
	f.send(1, info(0, 0, 2))
	f.send(1, info(0, 2, 2))
	for _, in := range []batch.Info{info(0, 5, 1), info(0, 3, 2)} {
		if _, err := f.send(1, in).result(t); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("seq %d after pending 0..3: %v, want ErrOutOfOrderSequence", in.FirstSequence, err)
		}
	}
	if s := f.send(1, info(0, 4, 1)); s.err != nil || len(f.started) != 3 {
		t.Fatalf("seq 4 after pending 0..3: %v, %d started", s.err, len(f.started))
	}
}

// A failed pending batch fails the ones started after it; the producer's
// state is then what was applied, so the client's resends start over from
// the first failed one.
func TestPipelinedFailureDropsLaterPending(t *testing.T) {
	f := newFake(t)
	f.send(1, info(0, 0, 2))
	b := f.send(1, info(0, 2, 2))
	c := f.send(1, info(0, 4, 2))
	f.apply()
	f.fail()
	if _, err := b.result(t); !errors.Is(err, errLost) {
		t.Fatalf("b: %v", err)
	}
	if _, err := c.result(t); !errors.Is(err, errLost) {
		t.Fatalf("c: %v", err)
	}
	// c's resend alone is a gap: b is not in the log.
	if _, err := f.send(1, info(0, 4, 2)).result(t); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("c resent before b: %v, want ErrOutOfOrderSequence", err)
	}
	rb := f.send(1, info(0, 2, 2))
	rc := f.send(1, info(0, 4, 2))
	if rb.err != nil || rc.err != nil || len(f.started) != 5 {
		t.Fatalf("resends: %v, %v, %d started, want both started again", rb.err, rc.err, len(f.started))
	}
	f.apply()
	f.apply()
	if r, err := rc.result(t); err != nil || r.Duplicate || r.BaseOffset != f.started[4].info.BaseOffset {
		t.Fatalf("c resent: %+v, %v", r, err)
	}
}

// A batch failed while nobody waits for it is forgotten at the next
// check, with the ones after it.
func TestPipelinedFailureSeenWithoutWaiter(t *testing.T) {
	f := newFake(t)
	f.send(1, info(0, 0, 1))
	f.send(1, info(0, 1, 1))
	f.fail()
	if s := f.send(1, info(0, 0, 1)); s.err != nil || len(f.started) != 3 {
		t.Fatalf("resend of failed first batch: %v, %d started, want started again", s.err, len(f.started))
	}
}

// A waiter whose context ends leaves its batch pending: a retry waits for
// the original instead of appending it again.
func TestPipelinedOutcomeUnknownStaysPending(t *testing.T) {
	f := newFake(t)
	a := f.send(1, info(0, 0, 3))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.wait(ctx); err == nil {
		t.Fatal("no error for an ended context")
	}
	retry := f.send(1, info(0, 0, 3))
	if retry.err != nil || len(f.started) != 1 {
		t.Fatalf("retry after outcome unknown: %v, %d started", retry.err, len(f.started))
	}
	f.apply()
	if r, err := retry.result(t); err != nil || !r.Duplicate || r.BaseOffset != 0 || r.LastOffset != 2 {
		t.Fatalf("retry: %+v, %v", r, err)
	}
}

// Under a new leadership, batches pending from the old one are forgotten:
// the replica applied them (and Observed) or they are lost.
func TestPipelinedNewLeadershipForgetsPending(t *testing.T) {
	f := newFake(t)
	f.send(1, info(0, 0, 1))
	f.send(1, info(0, 1, 1))
	f.apply() // seq 0 applied; seq 1 lost with leadership 1 (not failed yet)
	if s := f.send(2, info(0, 1, 1)); s.err != nil || len(f.started) != 3 {
		t.Fatalf("resend of seq 1 under leadership 2: %v, %d started", s.err, len(f.started))
	}
	if _, err := f.send(2, info(0, 3, 1)).result(t); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("seq 3 after 1: %v", err)
	}
}

func TestPipelinedEpochs(t *testing.T) {
	f := newFake(t)
	f.send(1, info(0, 0, 1))
	f.send(1, info(0, 1, 1))
	// A new epoch starts at sequence 0, behind the old one's pending.
	n := f.send(1, info(1, 0, 1))
	if n.err != nil || len(f.started) != 3 {
		t.Fatalf("new epoch: %v", n.err)
	}
	for _, in := range []batch.Info{info(0, 2, 1), info(0, 1, 1)} {
		if _, err := f.send(1, in).result(t); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("old epoch seq %d: %v, want fenced", in.FirstSequence, err)
		}
	}
	f.apply()
	f.apply()
	f.apply()
	if r, err := f.send(1, info(1, 0, 1)).result(t); err != nil || !r.Duplicate || r.BaseOffset != 2 {
		t.Fatalf("retry in the new epoch: %+v, %v", r, err)
	}
	if s := f.send(1, info(1, 1, 1)); s.err != nil || len(f.started) != 4 {
		t.Fatalf("next in the new epoch: %v", s.err)
	}
}

// A batch applied before StartAppendVia records it as pending is not left
// pending (it would make its retries wait for good).
func TestPipelinedAppliedDuringStart(t *testing.T) {
	f := newFake(t)
	in := info(0, 0, 1)
	start := f.start(in)
	wait, err := f.p.StartAppendVia(checkedOf(t, in), 1, func(c batch.Checked, after Write) (Write, error) {
		w, err := start(c, after)
		f.apply()
		return w, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := (started{a: wait}).result(t); err != nil || r.BaseOffset != 0 {
		t.Fatalf("%+v, %v", r, err)
	}
	if n := len(f.p.producers[7].pending); n != 0 {
		t.Fatalf("%d pending after apply", n)
	}
	if r, err := f.send(1, in).result(t); err != nil || !r.Duplicate {
		t.Fatalf("retry: %+v, %v", r, err)
	}
}

// One write at a time (each applied before the next starts), the
// producer's rules: a retry is a duplicate with the original offsets, a gap
// or an older epoch's sequence is refused, a new epoch starts at 0.
func TestSequencesOneAtATime(t *testing.T) {
	f := newFake(t)
	tests := []struct {
		in      batch.Info
		base    int64
		dup     bool
		wantErr error
	}{
		{info(0, 0, 2), 0, false, nil},
		{info(0, 2, 1), 2, false, nil},
		{info(0, 0, 2), 0, true, nil},
		{info(0, 5, 1), 0, false, ErrOutOfOrderSequence},
		{info(1, 9, 1), 0, false, ErrOutOfOrderSequence},
		{info(1, 0, 1), 3, false, nil},
		{info(0, 3, 1), 0, false, ErrOutOfOrderSequence},
	}
	for i, tc := range tests {
		s := f.send(1, tc.in)
		if f.applied < len(f.started) {
			f.apply()
		}
		r, err := s.result(t)
		if !errors.Is(err, tc.wantErr) || (err == nil && (r.BaseOffset != tc.base || r.Duplicate != tc.dup)) {
			t.Fatalf("%d: %+v, %v; want base %d dup %v err %v", i, r, err, tc.base, tc.dup, tc.wantErr)
		}
	}
}

// A producer with pending batches is not evicted: its retries must find
// them.
func TestPendingProducerNotEvicted(t *testing.T) {
	f := newFake(t)
	f.send(1, info(0, 0, 1))
	for id := int64(100); id < 100+maxProducers; id++ {
		f.p.Observe(batch.Info{ProducerID: id, LastOffsetDelta: 0, NumRecords: 1})
	}
	if _, ok := f.p.producers[7]; !ok {
		t.Fatal("the producer with a pending batch was evicted")
	}
	if s := f.send(1, info(0, 0, 1)); s.err != nil || len(f.started) != 1 {
		t.Fatalf("retry of the pending batch: %v, %d started", s.err, len(f.started))
	}
}

// Seed 3 of the torture run (make torture DURATION=10m SEED=3): a Kafka
// producer bumped its epoch (franz-go does so locally after a record
// timeout, KIP-360) and restarted its sequences at 0. The new epoch's
// first batch failed (its leader stepped down) and the next one, at
// sequence 2, was accepted: a new epoch was taken at any sequence. The
// retry of the first batch then fell below the producer's last sequence
// and was answered as an old duplicate (offset -1) though it was never
// stored: two acknowledged records lost. A known producer's new epoch
// must start at sequence 0, as in Kafka.
func TestNewEpochMustStartAtZero(t *testing.T) {
	f := newFake(t)
	f.send(1, info(0, 0, 2))
	f.apply()
	b := f.send(1, info(1, 0, 2))
	f.fail()
	if _, err := b.result(t); !errors.Is(err, errLost) {
		t.Fatalf("first batch of epoch 1: %v, want it failed", err)
	}
	if s := f.send(1, info(1, 2, 1)); len(f.started) != 2 {
		t.Fatalf("epoch 1 at sequence 2 was started (%v): a gap before it", s.err)
	} else if _, err := s.result(t); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("epoch 1 at sequence 2: %v, want ErrOutOfOrderSequence", err)
	}
	retry := f.send(1, info(1, 0, 2))
	if len(f.started) != 3 {
		r, err := retry.result(t)
		t.Fatalf("retry of epoch 1's first batch not stored: answered %+v, %v", r, err)
	}
	f.apply()
	if r, err := retry.result(t); err != nil || r.Duplicate || r.BaseOffset < 0 {
		t.Fatalf("retry of epoch 1's first batch: %+v, %v", r, err)
	}
	if s := f.send(1, info(1, 2, 1)); s.err != nil || len(f.started) != 4 {
		t.Fatalf("epoch 1 at sequence 2 after 0..1: %v", s.err)
	}
}

// A producer first seen at a sequence above 0 (unknown: new, forgotten, or
// its batches trimmed) is accepted there, as in Kafka; a batch below that
// sequence was never seen, so it is not answered as a duplicate (offset
// -1, success) but refused: nothing proves it was stored.
func TestBelowFirstKnownSequenceIsNotADuplicate(t *testing.T) {
	f := newFake(t)
	f.send(1, info(0, 4, 2))
	f.apply()
	s := f.send(1, info(0, 0, 2))
	if r, err := s.result(t); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 0..1 below the first known 4: %+v, %v, want ErrOutOfOrderSequence", r, err)
	}
	if r, err := f.send(1, info(0, 4, 2)).result(t); err != nil || !r.Duplicate || r.BaseOffset != 0 {
		t.Fatalf("retry of the first known batch: %+v, %v", r, err)
	}
}
