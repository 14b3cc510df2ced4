package txn

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// MaxTimeout bounds the transaction timeout a producer may ask
// (Kafka's transaction.max.timeout.ms default).
const MaxTimeout = 15 * time.Minute

// Store keeps the records durably: Put returns once r is stored (in a
// cluster: committed by the metadata group). Confirm returns once the
// records the coordinator holds are proven current (in a cluster: this
// node still leads the metadata group): an answer given from memory,
// without a Put, is confirmed first, so that a coordinator that lost its
// lead without knowing it yet (a paused process) cannot answer for a
// record its successor changed.
type Store interface {
	Put(ctx context.Context, r Record) error
	Confirm(ctx context.Context) error
}

// Marker is a transaction's marker: its producer id and epoch, its
// number (Record.Txn), and whether it commits.
type Marker struct {
	ProducerID int64
	Epoch      int16
	Txn        int32
	Commit     bool
}

// Writer ends transactions in the partitions and groups.
type Writer interface {
	// WriteMarkers writes m to each partition, and returns once all are
	// stored. Writing it again is harmless, and so is a copy of an
	// earlier write that lands late: a partition applies one marker per
	// transaction number of a producer id.
	WriteMarkers(ctx context.Context, m Marker, parts []TopicPartition) error
	// CommitOffsets commits a group's offsets, as OffsetCommit does.
	CommitOffsets(ctx context.Context, group string, offs []Offset) error
}

// Config is what a Coordinator needs.
type Config struct {
	Store  Store
	Writer Writer
	// NewProducerID gives a fresh producer id.
	NewProducerID func() (int64, error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Records are the records stored before (a new coordinator takes them
	// over; Tick finishes what they left in flight).
	Records []Record
	// Log gets each End decision at debug level (nil: none).
	Log *slog.Logger
}

// Coordinator is the transaction coordinator.
type Coordinator struct {
	cfg Config

	mu      sync.Mutex
	entries map[string]*entry
}

// entry is one transactional id: its lock serializes the id's steps.
type entry struct {
	mu  sync.Mutex
	rec Record
	ok  bool // rec is stored
}

// New is a coordinator that holds cfg.Records.
func New(cfg Config) *Coordinator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Coordinator{cfg: cfg, entries: map[string]*entry{}}
	for _, r := range cfg.Records {
		c.entries[r.ID] = &entry{rec: r.Clone(), ok: true}
	}
	return c
}

// lock returns id's entry, locked.
func (c *Coordinator) lock(id string) *entry {
	c.mu.Lock()
	e, ok := c.entries[id]
	if !ok {
		e = &entry{}
		c.entries[id] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	return e
}

// put stores r as e's record, then takes it in memory.
func (c *Coordinator) put(ctx context.Context, e *entry, r Record) error {
	r.UpdatedMs = c.cfg.Now().UnixMilli()
	if err := c.cfg.Store.Put(ctx, r); err != nil {
		return err
	}
	e.rec, e.ok = r, true
	return nil
}

// Get is id's record.
func (c *Coordinator) Get(id string) (Record, bool) {
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if !ok {
		return Record{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec.Clone(), e.ok
}

// Records is every stored record, by id.
func (c *Coordinator) Records() []Record {
	c.mu.Lock()
	ids := make([]string, 0, len(c.entries))
	for id := range c.entries {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	sort.Strings(ids)
	var out []Record
	for _, id := range ids {
		if r, ok := c.Get(id); ok {
			out = append(out, r)
		}
	}
	return out
}

// InitProducerID gives transactional id its producer id and a new epoch,
// fencing every earlier epoch: a transaction the previous one left open is
// aborted first (one being ended is finished first). pid and epoch, when
// pid >= 0, are the producer's current ones (KIP-360): they must be the
// id's current ones.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeout time.Duration, pid int64, epoch int16) (int64, int16, error) {
	if timeout <= 0 || timeout > MaxTimeout {
		return 0, 0, errorf(CodeInvalidTimeout, "transaction timeout %v: must be above 0 and at most %v", timeout, MaxTimeout)
	}
	e := c.lock(id)
	defer e.mu.Unlock()
	if !e.ok {
		np, err := c.cfg.NewProducerID()
		if err != nil {
			return 0, 0, err
		}
		r := Record{ID: id, ProducerID: np, State: Empty, TimeoutMs: int32(timeout.Milliseconds())}
		if err := c.put(ctx, e, r); err != nil {
			return 0, 0, err
		}
		return np, 0, nil
	}
	if pid >= 0 && (pid != e.rec.ProducerID || epoch != e.rec.Epoch) {
		return 0, 0, errorf(CodeProducerFenced, "transactional id %q: producer id %d epoch %d is not the current one", id, pid, epoch)
	}
	if err := c.finish(ctx, e); err != nil {
		return 0, 0, err
	}
	if e.rec.State == Ongoing {
		if err := c.abort(ctx, e, true); err != nil {
			return 0, 0, err
		}
	}
	r := e.rec.Clone()
	r.TimeoutMs = int32(timeout.Milliseconds())
	r.Ended = nil
	if r.Epoch >= math.MaxInt16-1 || r.Txn == math.MaxInt32 {
		np, err := c.cfg.NewProducerID()
		if err != nil {
			return 0, 0, err
		}
		r.ProducerID, r.Epoch, r.Txn = np, 0, 0
	} else {
		r.Epoch++
	}
	if err := c.put(ctx, e, r); err != nil {
		return 0, 0, err
	}
	return r.ProducerID, r.Epoch, nil
}

// check refuses a request whose producer id or epoch is not the id's
// current one.
func check(e *entry, id string, pid int64, epoch int16) error {
	switch {
	case !e.ok || pid != e.rec.ProducerID:
		return errorf(CodeUnknownProducer, "transactional id %q has no producer id %d: call InitProducerId first", id, pid)
	case epoch != e.rec.Epoch:
		return errorf(CodeProducerFenced, "transactional id %q: epoch %d is fenced, the current one is %d", id, epoch, e.rec.Epoch)
	}
	return nil
}

// begin is e's record with a transaction Ongoing: a new one after an
// ended one; CodeConcurrent while one is being ended.
func (c *Coordinator) begin(e *entry) (Record, error) {
	r := e.rec.Clone()
	switch r.State {
	case Ongoing:
	case PrepareCommit, PrepareAbort:
		return r, errorf(CodeConcurrent, "transactional id %q: the previous transaction is still being ended", r.ID)
	default:
		if r.Txn == math.MaxInt32 {
			// The numbers are the producer id's: InitProducerID gives a
			// new one.
			return r, errorf(CodeProducerFenced, "transactional id %q: producer id %d has numbered all its transactions: initialize the producer again (InitProducerId)", r.ID, r.ProducerID)
		}
		r.Txn++
		r.State, r.StartMs = Ongoing, c.cfg.Now().UnixMilli()
		r.Partitions, r.Groups, r.Offsets, r.Ended = nil, nil, nil, nil
	}
	return r, nil
}

// AddPartitions adds partitions to id's transaction, beginning one.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition) error {
	e := c.lock(id)
	defer e.mu.Unlock()
	if err := check(e, id, pid, epoch); err != nil {
		return err
	}
	return c.addPartitions(ctx, e, parts)
}

// addPartitions adds parts to e's transaction, beginning one: stored
// when that changes the record, else only confirmed current.
func (c *Coordinator) addPartitions(ctx context.Context, e *entry, parts []TopicPartition) error {
	r, err := c.begin(e)
	if err != nil {
		return err
	}
	changed := e.rec.State != Ongoing
	for _, tp := range parts {
		if !r.HasPartition(tp) {
			r.Partitions, changed = append(r.Partitions, tp), true
		}
	}
	if !changed {
		return c.cfg.Store.Confirm(ctx)
	}
	return c.put(ctx, e, r)
}

// AddOffsets adds a group to id's transaction (its offsets are then sent
// with CommitOffsets), beginning one.
func (c *Coordinator) AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string) error {
	e := c.lock(id)
	defer e.mu.Unlock()
	if err := check(e, id, pid, epoch); err != nil {
		return err
	}
	held := e.rec.State == Ongoing && slices.Contains(e.rec.Groups, group)
	r, err := c.addGroup(e, group)
	if err != nil {
		return err
	}
	if held {
		return c.cfg.Store.Confirm(ctx)
	}
	return c.put(ctx, e, r)
}

// CommitOffsets sends a group's offsets to id's ongoing transaction:
// they are committed if it commits. The transaction must hold the group
// (AddOffsets), unless add: then the group is added, and a transaction
// begun when none is ongoing (transaction version 2, bump.go).
func (c *Coordinator) CommitOffsets(ctx context.Context, id string, pid int64, epoch int16, group string, offs []Offset, add bool) error {
	e := c.lock(id)
	defer e.mu.Unlock()
	if err := check(e, id, pid, epoch); err != nil {
		return err
	}
	var r Record
	if add {
		var err error
		if r, err = c.addGroup(e, group); err != nil {
			return err
		}
	} else if e.rec.State != Ongoing || !slices.Contains(e.rec.Groups, group) {
		return errorf(CodeInvalidState, "transactional id %q: group %q is not in an ongoing transaction (AddOffsetsToTxn first)", id, group)
	} else {
		r = e.rec.Clone()
	}
	if r.Offsets == nil {
		r.Offsets = map[string][]Offset{}
	}
	for _, o := range offs {
		i := slices.IndexFunc(r.Offsets[group], func(x Offset) bool { return x.Topic == o.Topic && x.Partition == o.Partition })
		if i >= 0 {
			r.Offsets[group][i] = o
		} else {
			r.Offsets[group] = append(r.Offsets[group], o)
		}
	}
	return c.put(ctx, e, r)
}

// End commits or aborts id's transaction: the decision is stored, the
// markers written, a commit's offsets committed, and the end stored. A
// retry of an end that was done answers nil.
func (c *Coordinator) End(ctx context.Context, id string, pid int64, epoch int16, commit bool) (err error) {
	e := c.lock(id)
	defer e.mu.Unlock()
	before := e.rec.Clone()
	defer func() { c.logEnd(ctx, "transactions: end", id, pid, epoch, commit, before, e, err) }()
	if err := check(e, id, pid, epoch); err != nil {
		return err
	}
	want, done := PrepareAbort, CompleteAbort
	if commit {
		want, done = PrepareCommit, CompleteCommit
	}
	switch e.rec.State {
	case Ongoing:
		r := e.rec.Clone()
		r.State = want
		if err := c.put(ctx, e, r); err != nil {
			return err
		}
	case want:
	case done:
		// A retry of an end that was done.
		return c.cfg.Store.Confirm(ctx)
	default:
		return errorf(CodeInvalidState, "transactional id %q: cannot %s a transaction in state %v", id, verb(commit), e.rec.State)
	}
	return c.finish(ctx, e)
}

// logEnd logs an end decision at debug level: the request (an abort the
// coordinator decided names the record's producer id and epoch), the
// record before and after it, and the answer.
func (c *Coordinator) logEnd(ctx context.Context, msg, id string, pid int64, epoch int16, commit bool, before Record, e *entry, err error) {
	if c.cfg.Log == nil || !c.cfg.Log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	answer := "ok"
	if err != nil {
		answer = err.Error()
	}
	c.cfg.Log.LogAttrs(ctx, slog.LevelDebug, msg,
		slog.String("transactional_id", id), slog.Bool("commit", commit),
		slog.Int64("producer_id", pid), slog.Int("epoch", int(epoch)),
		slog.Int64("record_producer_id", before.ProducerID), slog.Int("record_epoch", int(before.Epoch)),
		slog.Int("txn", int(before.Txn)), slog.String("state_before", before.State.String()),
		slog.Int("partitions", len(before.Partitions)),
		slog.Int("txn_after", int(e.rec.Txn)), slog.String("state_after", e.rec.State.String()),
		slog.String("answer", answer))
}

func verb(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// finish completes a Prepare* record: markers, offsets, the end stored.
// Other states are left as they are.
func (c *Coordinator) finish(ctx context.Context, e *entry) error {
	r := e.rec.Clone()
	if r.State != PrepareCommit && r.State != PrepareAbort {
		return nil
	}
	commit := r.State == PrepareCommit
	if len(r.Partitions) > 0 {
		m := Marker{ProducerID: r.ProducerID, Epoch: r.Epoch, Txn: r.Txn, Commit: commit}
		if err := c.cfg.Writer.WriteMarkers(ctx, m, r.Partitions); err != nil {
			// The decision stands: a retry (or Tick) writes them again.
			return errorf(CodeConcurrent, "transactional id %q: writing the %s markers: %v", r.ID, verb(commit), err)
		}
	}
	if commit {
		for _, g := range r.Groups {
			if offs := r.Offsets[g]; len(offs) > 0 {
				if err := c.cfg.Writer.CommitOffsets(ctx, g, offs); err != nil {
					return err
				}
			}
		}
		r.State = CompleteCommit
	} else {
		r.State = CompleteAbort
	}
	r.Partitions, r.Groups, r.Offsets = nil, nil, nil
	if en := r.Ended; en != nil && en.NextProducerID != nil && r.ProducerID == en.ProducerID {
		// The end used the producer id's last epoch or number: the
		// producer goes on with the new id the decision chose.
		r.ProducerID, r.Epoch, r.Txn = *en.NextProducerID, 0, 0
	}
	return c.put(ctx, e, r)
}

// abort aborts e's ongoing transaction; with bump under a new epoch, which
// fences the producer that opened it.
func (c *Coordinator) abort(ctx context.Context, e *entry, bump bool) (err error) {
	before := e.rec.Clone()
	defer func() {
		c.logEnd(ctx, "transactions: abort (timeout or fenced)", before.ID, before.ProducerID, before.Epoch, false, before, e, err)
	}()
	r := e.rec.Clone()
	r.State = PrepareAbort
	if bump && r.Epoch < math.MaxInt16-1 {
		// Its producer's abort at the old epoch is then answered as a
		// retry of this one when it ends with EndBump (KIP-890 part 2).
		r.Ended = &Ended{ProducerID: r.ProducerID, Epoch: r.Epoch}
		r.Epoch++
	}
	if err := c.put(ctx, e, r); err != nil {
		return err
	}
	return c.finish(ctx, e)
}

// Tick finishes every record left in Prepare* (a failed marker write, or
// a previous coordinator's) and aborts every transaction open longer than
// its timeout, bumping its epoch so that its producer is fenced. It
// returns the first error met; the others are tried all the same.
func (c *Coordinator) Tick(ctx context.Context) error {
	c.mu.Lock()
	ids := make([]string, 0, len(c.entries))
	for id := range c.entries {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	var first error
	now := c.cfg.Now().UnixMilli()
	for _, id := range ids {
		e := c.lock(id)
		var err error
		switch {
		case !e.ok:
		case e.rec.State == PrepareCommit || e.rec.State == PrepareAbort:
			err = c.finish(ctx, e)
		case e.rec.State == Ongoing && now-e.rec.StartMs > int64(e.rec.TimeoutMs):
			err = c.abort(ctx, e, true)
		}
		e.mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Verify answers a partition leader about to store producer pid's first
// batch at epoch of a transaction in tp (KIP-890's verification): the
// number of id's ongoing transaction when it holds tp, so that a late
// batch of a transaction that ended (or was never begun there) cannot
// open a transaction no marker will end.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, tp TopicPartition) (int32, error) {
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if !ok {
		return 0, errorf(CodeUnknownProducer, "transactional id %q has no producer id %d: call InitProducerId first", id, pid)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := check(e, id, pid, epoch); err != nil {
		return 0, err
	}
	if e.rec.State != Ongoing || !e.rec.HasPartition(tp) {
		return 0, errorf(CodeInvalidState, "transactional id %q: partition %s/%d is not in an ongoing transaction (state %v): AddPartitionsToTxn before producing to it", id, tp.Topic, tp.Partition, e.rec.State)
	}
	return e.rec.Txn, nil
}
