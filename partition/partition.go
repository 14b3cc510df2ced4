package partition

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// maxProducers bounds the idempotence state kept per partition; the least
// recently used producer is forgotten first (its retries are then accepted
// as new, like an unknown producer's).
const (
	maxProducers      = 10000
	rememberedBatches = 5
	recoveryReadBytes = 1 << 20
)

// Partition is one partition of a topic: its log and its producers'
// deduplication state.
type Partition struct {
	Topic string
	ID    int32
	Log   *log.Log

	mu        sync.Mutex // guards producers
	producers map[int64]*producerState
	txn       txnState // open and aborted transactions (txn.go)

	// writeMu is held across a single node's write of a batch and its
	// tracking (startLocal), so that batches of different producers are
	// tracked in the order of their offsets: trackTxn takes a batch below
	// the last one tracked for one tracked already, and a marker tracked
	// late would leave its transaction open (the last stable offset held
	// there for good).
	writeMu sync.Mutex
	// written, when set (tests), is called between the write and its
	// tracking.
	written func(batch.Info)
}

type producerState struct {
	// appendMu is held across a producer's sequence check and the start
	// of its write, so that its batches enter the log in order; the fields
	// below are guarded by the partition's mu (Observe updates them while
	// an append holds appendMu).
	appendMu sync.Mutex
	epoch    int16
	lastSeq  int32 // sequence of the last record appended
	// floor is the first sequence of epoch from which every record up to
	// lastSeq is known to be appended (batch after batch, no gap): where
	// the producer was first seen, its epoch began, or a gap was taken.
	// Only a batch in [floor, lastSeq] is provably an old duplicate.
	floor int32
	// fence is the highest epoch of the producer's transaction markers:
	// the coordinator bumps the epoch to end the transaction of an
	// instance a newer one fenced, so no batch of an older epoch may be
	// stored after that marker (a zombie's late write would join no
	// transaction, or the next one of the new instance).
	fence int16
	// markerTxn is the number of the last transaction whose marker was
	// applied here, markerPending the marker started on this leader and
	// not applied yet (marker.go).
	markerTxn     int32
	markerPending *pendingMarker
	recent        []appendedBatch
	lastUsed      time.Time
	// pending are the batches started (StartAppendVia) and not yet
	// appended for good, in the order they were started, which is the
	// order they enter the log.
	pending []*pendingBatch
}

type appendedBatch struct {
	firstSeq, lastSeq int32
	base, last        int64
}

type pendingBatch struct {
	epoch             int16
	firstSeq, lastSeq int32
	lead              uint64
	w                 Write
}

// Write is a batch on its way to the log through a replicated path (see
// StartAppendVia): started, with an outcome to wait for.
type Write interface {
	// Wait waits for the answer its starter asked for (acks), or for ctx.
	// An error after ctx ended leaves the outcome unknown: the batch stays
	// pending until Done.
	Wait(ctx context.Context) (log.Span, error)
	// Done is closed when the outcome is final: the batch is appended for
	// good (applied, and Observed before Done is closed) or failed.
	Done() <-chan struct{}
	// Result is the final outcome, once Done is closed: the offsets, or
	// why the batch was not appended.
	Result() (log.Span, error)
}

// AppendResult is where a batch landed.
type AppendResult struct {
	BaseOffset, LastOffset int64
	// Duplicate: the batch had been appended before; the offsets are the
	// original ones (-1 when too old to be remembered).
	Duplicate bool
}

func newPartition(topic string, id int32, l *log.Log) *Partition {
	p := &Partition{Topic: topic, ID: id, Log: l, producers: make(map[int64]*producerState)}
	return p
}

// Name is "topic-partition", as in the data directory.
func (p *Partition) Name() string { return fmt.Sprintf("%s-%d", p.Topic, p.ID) }

// Append appends one checked batch (batch.Validate), deduplicating
// idempotent producers' retries, and returns once it is durable. Its bytes
// are modified in place by the log. It is StartAppend, then its Wait.
func (p *Partition) Append(c batch.Checked) (AppendResult, error) {
	a, err := p.StartAppend(c)
	if err != nil {
		return AppendResult{}, err
	}
	return a.Wait(context.Background())
}

// StartAppend is Append on a single node in two steps: the batch is
// checked against its producer's state and written to the log, in order,
// before StartAppend returns (its bytes are not retained); the Appending's
// Wait waits until it is durable (log.AppendStart). A producer's next
// batch may start meanwhile: its sequence is checked against the batches
// written and not yet durable too (see StartAppendVia for the rules: a
// retry of such a batch waits for the original, a failed wait drops the
// producer's later pending batches).
//
// A wait that ends with its context leaves the batch pending until its
// fsync ends (or fails, or the log closes): a retry then waits for it.
func (p *Partition) StartAppend(c batch.Checked) (*Appending, error) {
	return p.startAppendVia(c, 0, 0, p.startLocal)
}

// StartTxnAppend is StartAppend of a transactional batch verified as
// transaction txn's, or TxnContinues (see StartTxnAppendVia).
func (p *Partition) StartTxnAppend(c batch.Checked, txn int32) (*Appending, error) {
	return p.startAppendVia(c, 0, txn, p.startLocal)
}

// startLocal writes c to the partition's own log (StartAppendVia's start
// on a single node).
func (p *Partition) startLocal(c batch.Checked, after Write) (Write, error) {
	p.writeMu.Lock()
	got, written, err := p.Log.AppendStart(c)
	if err != nil {
		p.writeMu.Unlock()
		return nil, err
	}
	if p.written != nil {
		p.written(got)
	}
	// Before the high watermark can move past it (the fsync).
	p.trackTxn(got, c.Bytes())
	p.writeMu.Unlock()
	w := &localWrite{p: p, info: got, written: written, done: make(chan struct{})}
	if a, ok := after.(*localWrite); ok {
		w.prev = a
	}
	return w, nil
}

// localWrite is a batch written to the partition's own log and maybe not
// durable yet. It is settled once, by the first to wait for it: its
// producer's earlier pending batch first (the log makes them durable in
// order), so that they are Observed in order.
type localWrite struct {
	p       *Partition
	info    batch.Info // as written: with its offsets
	written log.Written
	prev    *localWrite // the producer's previous pending batch, until settled

	once sync.Once
	done chan struct{}
	res  log.Span
	err  error
}

func (w *localWrite) settle() {
	w.once.Do(func() {
		if w.prev != nil {
			w.prev.settle()
			w.prev = nil
		}
		w.err = w.written.Wait()
		if w.err == nil {
			w.p.Observe(w.info)
			w.res = log.Span{BaseOffset: w.info.BaseOffset, LastOffset: w.info.LastOffset()}
		}
		close(w.done)
	})
}

// Wait waits until the batch is durable, or for ctx; the batch is settled
// anyway (see StartAppend).
func (w *localWrite) Wait(ctx context.Context) (log.Span, error) {
	if ctx.Done() == nil {
		w.settle()
		return w.res, w.err
	}
	select {
	case <-w.done:
		return w.res, w.err
	default:
	}
	go w.settle()
	select {
	case <-w.done:
		return w.res, w.err
	case <-ctx.Done():
		return log.Span{}, ctx.Err()
	}
}

func (w *localWrite) Done() <-chan struct{} { return w.done }

func (w *localWrite) Result() (log.Span, error) {
	<-w.done
	return w.res, w.err
}

// Appending is a batch's append under way (StartAppend, StartAppendVia):
// Wait answers it.
type Appending struct {
	p *Partition
	// w is the write started, or, when retry is set, the pending original
	// of a retried batch; nil when the answer was known at once (res,
	// err).
	w     Write
	retry bool
	res   AppendResult
	err   error
	// st and pb are the producer's state and the batch's pending entry,
	// forgotten when the write fails; nil without a producer.
	st *producerState
	pb *pendingBatch
}

// Wait waits for the batch's answer, or for ctx: an error after ctx ended
// leaves the outcome unknown (the batch stays pending until its write is
// Done). A failed write forgets the batch with every batch of its
// producer started after it.
func (a *Appending) Wait(ctx context.Context) (AppendResult, error) {
	switch {
	case a.w == nil:
		return a.res, a.err
	case a.retry:
		return waitOriginal(ctx, a.w)
	}
	res, err := answer(a.w.Wait(ctx))
	if err != nil && ctx.Err() == nil && a.pb != nil {
		a.p.mu.Lock()
		a.st.dropPending(a.pb)
		a.p.mu.Unlock()
	}
	return res, err
}

// StartAppendVia starts appending c through a replicated path that orders
// writes as they are started (Raft orders entries as they are applied) and
// returns, without waiting for the outcome, the Appending that waits for
// it. The producer's lock is held only across the sequence check and
// start, so that a producer's batches pipeline: the check sees the batches
// started and not yet appended (pending), a retry of a pending batch is not
// started again but answered with the original's outcome (Wait waits for
// it), and the state is updated as the batches are applied (Observe).
//
// start gets the producer's previous batch when it is still pending
// (after), so that the path can refuse to store c unless after was stored
// first: c must never land after a gap.
//
// lead identifies the leadership the write is started under (the Raft
// term); the caller must only start writes once its replica has applied
// every entry of earlier leaderships, so that the Observed state is whole.
// Batches still pending from another leadership are forgotten: they were
// applied (and Observed) or are lost. A pending batch that fails is
// forgotten with every batch of the producer started after it (they are
// failed too, or will be); one whose outcome is unknown (its waiter's
// context ended) stays pending until it is Done.
func (p *Partition) StartAppendVia(c batch.Checked, lead uint64, start func(c batch.Checked, after Write) (Write, error)) (*Appending, error) {
	return p.startAppendVia(c, lead, 0, start)
}

// StartTxnAppendVia is StartAppendVia of a transactional batch the
// coordinator verified as transaction txn's (the first of its producer's
// transaction here): it fails with an error TxnEnded recognises when
// txn's marker, or a later one, is applied here or on its way, since the
// transaction ended here before its batch arrived. With txn TxnContinues
// the batch goes on the producer's open transaction, unverified.
func (p *Partition) StartTxnAppendVia(c batch.Checked, lead uint64, txn int32, start func(c batch.Checked, after Write) (Write, error)) (*Appending, error) {
	return p.startAppendVia(c, lead, txn, start)
}

func (p *Partition) startAppendVia(c batch.Checked, lead uint64, txn int32, start func(c batch.Checked, after Write) (Write, error)) (*Appending, error) {
	info := c.Info()
	if info.ProducerID < 0 {
		w, err := start(c, nil)
		if err != nil {
			return nil, err
		}
		return &Appending{p: p, w: w}, nil
	}
	st := p.producer(info.ProducerID)
	st.appendMu.Lock()
	defer st.appendMu.Unlock()
	if info.IsControl() {
		return p.startMarker(st, c, info, lead, start) // marker.go
	}
	switch {
	case txn > 0:
		if err := p.checkTxnLive(st, info, txn); err != nil {
			return nil, err
		}
	case txn == TxnContinues:
		if err := p.checkTxnGoesOn(info); err != nil {
			return nil, err
		}
	}
	firstSeq := info.FirstSequence
	lastSeq := firstSeq + info.LastOffsetDelta
	p.mu.Lock()
	st.prunePending(lead)
	res, orig, done, err := p.checkSequence(st, info, firstSeq, lastSeq, lead)
	var after Write
	if n := len(st.pending); n > 0 {
		after = st.pending[n-1].w
	}
	p.mu.Unlock()
	if orig != nil {
		return &Appending{p: p, w: orig, retry: true}, nil
	}
	if done {
		return &Appending{p: p, res: res, err: err}, nil
	}
	w, err := start(c, after)
	if err != nil {
		return nil, err
	}
	pb := &pendingBatch{epoch: info.ProducerEpoch, firstSeq: firstSeq, lastSeq: lastSeq, lead: lead, w: w}
	p.mu.Lock()
	// The batch may have been applied (and Observed) already.
	if !st.covers(info.ProducerEpoch, lastSeq) {
		st.pending = append(st.pending, pb)
	}
	p.mu.Unlock()
	return &Appending{p: p, w: w, st: st, pb: pb}, nil
}

// answer is a write's outcome as the producer's answer.
func answer(s log.Span, err error) (AppendResult, error) {
	return AppendResult{BaseOffset: s.BaseOffset, LastOffset: s.LastOffset}, err
}

// waitOriginal answers a retry of a pending batch with the original's
// final outcome.
func waitOriginal(ctx context.Context, w Write) (AppendResult, error) {
	if lw, ok := w.(*localWrite); ok {
		go lw.settle() // nobody may be waiting for it yet
	}
	select {
	case <-w.Done():
	case <-ctx.Done():
		return AppendResult{}, fmt.Errorf("waiting for the original of a retried batch: %w", ctx.Err())
	}
	res, err := answer(w.Result())
	if err != nil {
		return AppendResult{}, err
	}
	res.Duplicate = true
	return res, nil
}

// checkSequence answers a batch that must not be written: a retry of a
// remembered batch, an old one, a fenced epoch or a sequence gap; or,
// orig, the pending write it retries. The producer's pending batches
// (pruned) come after its remembered ones. p.mu is held.
func (p *Partition) checkSequence(st *producerState, info batch.Info, firstSeq, lastSeq int32, lead uint64) (res AppendResult, orig Write, done bool, err error) {
	epoch, last := st.epoch, st.lastSeq
	if n := len(st.pending); n > 0 {
		epoch, last = st.pending[n-1].epoch, st.pending[n-1].lastSeq
	}
	if info.ProducerEpoch < st.fence {
		return AppendResult{}, nil, true, fmt.Errorf("%w: producer %d epoch %d is older than epoch %d of its last transaction marker: a newer instance fenced it",
			ErrOutOfOrderSequence, info.ProducerID, info.ProducerEpoch, st.fence)
	}
	known := last >= 0
	if known && info.ProducerEpoch < epoch {
		return AppendResult{}, nil, true, fmt.Errorf("%w: producer %d epoch %d is older than epoch %d", ErrOutOfOrderSequence, info.ProducerID, info.ProducerEpoch, epoch)
	}
	if !known {
		return AppendResult{}, nil, false, nil
	}
	if info.ProducerEpoch != epoch {
		// A new epoch restarts the sequences (Kafka: KIP-360). Taken at
		// any other sequence, the batches before it in the epoch, still
		// to be retried, would fall below lastSeq and be answered as old
		// duplicates without ever being stored: acknowledged records lost.
		if firstSeq != 0 {
			return AppendResult{}, nil, true, fmt.Errorf("%w: producer %d epoch %d starts at sequence %d, expected 0: send the epoch's first batch first",
				ErrOutOfOrderSequence, info.ProducerID, info.ProducerEpoch, firstSeq)
		}
		return AppendResult{}, nil, false, nil
	}
	for _, pb := range st.pending {
		if pb.epoch == epoch && pb.firstSeq == firstSeq && pb.lastSeq == lastSeq {
			return AppendResult{}, pb.w, true, nil
		}
	}
	if st.epoch == epoch {
		for _, r := range st.recent {
			if r.firstSeq == firstSeq && r.lastSeq == lastSeq {
				return AppendResult{BaseOffset: r.base, LastOffset: r.last, Duplicate: true}, nil, true, nil
			}
		}
		if firstSeq < st.floor {
			// Never seen here: stored before the producer's state was
			// lost (retention, eviction), or never. Nothing proves it.
			return AppendResult{}, nil, true, fmt.Errorf("%w: producer %d sent sequence %d, before %d, the first this partition knows of: it cannot tell whether that batch was stored",
				ErrOutOfOrderSequence, info.ProducerID, firstSeq, st.floor)
		}
		if firstSeq <= st.lastSeq {
			return AppendResult{BaseOffset: -1, LastOffset: -1, Duplicate: true}, nil, true, nil
		}
	}
	if firstSeq != last+1 {
		return AppendResult{}, nil, true, fmt.Errorf("%w: producer %d sent sequence %d, expected %d: resend the earlier batches first",
			ErrOutOfOrderSequence, info.ProducerID, firstSeq, last+1)
	}
	return AppendResult{}, nil, false, nil
}

// covers reports whether the appended state holds the batch of epoch
// ending at lastSeq. p.mu is held.
func (st *producerState) covers(epoch int16, lastSeq int32) bool {
	return st.lastSeq >= 0 && st.epoch == epoch && st.lastSeq >= lastSeq
}

// prunePending forgets pending batches started under another leadership
// than lead, and the first failed one with every one after it. p.mu is
// held.
func (st *producerState) prunePending(lead uint64) {
	for i, pb := range st.pending {
		if pb.lead != lead {
			st.truncatePending(i)
			return
		}
		if failed(pb.w) {
			st.truncatePending(i)
			return
		}
	}
}

// dropPending forgets pb, failed, and every batch started after it. p.mu
// is held.
func (st *producerState) dropPending(pb *pendingBatch) {
	for i, q := range st.pending {
		if q == pb {
			st.truncatePending(i)
			return
		}
	}
}

func (st *producerState) truncatePending(i int) {
	clear(st.pending[i:])
	st.pending = st.pending[:i]
}

// Observe records a batch appended to the log by another path: a
// replicated partition's batches as Raft applies them on every replica, so
// that a replica that becomes leader knows its producers. A batch the state
// already holds is ignored. Pending batches it covers are appended for
// good.
func (p *Partition) Observe(info batch.Info) {
	if info.ProducerID < 0 || info.IsControl() {
		return
	}
	st := p.producer(info.ProducerID)
	p.mu.Lock()
	defer p.mu.Unlock()
	lastSeq := info.FirstSequence + info.LastOffsetDelta
	n := 0
	for _, pb := range st.pending {
		if pb.epoch > info.ProducerEpoch || (pb.epoch == info.ProducerEpoch && pb.lastSeq > lastSeq) {
			break
		}
		n++
	}
	if n > 0 {
		clear(st.pending[:n])
		st.pending = st.pending[n:]
	}
	if st.lastSeq >= 0 && info.ProducerEpoch == st.epoch && lastSeq <= st.lastSeq {
		return
	}
	if st.lastSeq >= 0 && info.ProducerEpoch < st.epoch {
		return
	}
	st.remember(info.ProducerEpoch, appendedBatch{info.FirstSequence, lastSeq, info.BaseOffset, info.LastOffset()})
}

// remember records an appended batch; p.mu is held.
func (st *producerState) remember(epoch int16, a appendedBatch) {
	switch {
	case st.lastSeq < 0 || epoch != st.epoch:
		st.recent = st.recent[:0]
		st.floor = a.firstSeq
	case a.firstSeq > st.lastSeq+1:
		st.floor = a.firstSeq // what came between is unknown here
	}
	st.epoch = epoch
	st.lastSeq = a.lastSeq
	if len(st.recent) == rememberedBatches {
		copy(st.recent, st.recent[1:])
		st.recent = st.recent[:rememberedBatches-1]
	}
	st.recent = append(st.recent, a)
}

func (p *Partition) producer(id int64) *producerState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.producers[id]
	if !ok {
		if len(p.producers) >= maxProducers {
			p.evictOldest()
		}
		st = &producerState{lastSeq: -1}
		p.producers[id] = st
	}
	st.lastUsed = time.Now()
	return st
}

func (p *Partition) evictOldest() {
	var oldID int64
	var oldest time.Time
	first := true
	for id, st := range p.producers {
		if len(st.pending) > 0 || st.markerPending != nil {
			continue // its retries must find the pending batches
		}
		if first || st.lastUsed.Before(oldest) {
			oldID, oldest, first = id, st.lastUsed, false
		}
	}
	if !first {
		delete(p.producers, oldID)
	}
}

// Producer state is rebuilt on open from recent batches: those of every
// segment written in the last producerMemory (a client retries a batch for
// its delivery timeout, two minutes by default), and at least the active
// segment and the one before, but no more than producerScanBytes of
// segments, which bounds the cost of opening a partition.
const (
	producerMemory    = 10 * time.Minute
	producerScanBytes = 256 << 20
)

// RebuildProducers rebuilds the producers' state from the log's recent
// batches, as at open: a replicated partition calls it when Raft restored a
// snapshot, whose batches it never saw applied.
func (p *Partition) RebuildProducers() error { return p.recoverProducers() }

// recoverProducers rebuilds the producers' state from the batches of the
// recent segments (see producerMemory). Reads are bounded (1 MiB at a time).
func (p *Partition) recoverProducers() error {
	p.txn.reset() // until loadTxnIndex, aborts are not written to the index
	from, err := p.scanRecent()
	p.txn.mu.Lock()
	p.txn.loading = false
	p.txn.mu.Unlock()
	if err != nil {
		return err
	}
	if err := p.loadTxnIndex(p.Log.StartOffset(), from); err != nil {
		return fmt.Errorf("partition %s: aborted-transaction index: %w", p.Name(), err)
	}
	return nil
}

// scanRecent reads the recent segments' batches into the producers' and
// transactions' state; it returns the first offset it read.
func (p *Partition) scanRecent() (int64, error) {
	segs := p.Log.Segments()
	if len(segs) == 0 {
		return p.Log.StartOffset(), nil
	}
	since := time.Now().Add(-producerMemory).UnixMilli()
	first := len(segs) - 1
	scanned := segs[first].Size
	for first > 0 {
		prev := segs[first-1]
		recent := prev.MaxTimestamp >= since || prev.Created.UnixMilli() >= since
		if first < len(segs)-1 && (!recent || scanned+prev.Size > producerScanBytes) {
			break
		}
		first--
		scanned += prev.Size
	}
	off := max(segs[first].BaseOffset, p.Log.StartOffset())
	from := off
	hw := p.Log.HighWatermark()
	for off < hw {
		b, err := p.Log.Read(off, recoveryReadBytes)
		if err != nil {
			if errors.Is(err, log.ErrOffsetOutOfRange) {
				return from, nil
			}
			return from, fmt.Errorf("partition %s: rebuild producer state: %w", p.Name(), err)
		}
		if len(b) == 0 {
			return from, nil
		}
		err = batch.Split(b, func(one []byte, info batch.Info) error {
			off = info.NextOffset()
			p.trackTxn(info, one)
			p.Observe(info)
			return nil
		})
		if err != nil {
			return from, fmt.Errorf("partition %s: rebuild producer state: %w", p.Name(), err)
		}
	}
	return from, nil
}
