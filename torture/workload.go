package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/client"
)

// WorkloadConfig configures a Workload. Zero values take the defaults.
type WorkloadConfig struct {
	Topic           string // default "torture"
	Partitions      int32  // default 3
	Producers       int    // default 3
	KeysPerProducer int    // default 4
	// ProduceRate is each producer's records per second (default 100).
	ProduceRate int
	// MaxOutstanding bounds a producer's records produced and not yet
	// acknowledged or failed (default 32).
	MaxOutstanding int
	// TopicConfig is the topic's configuration; zero: no retention limits
	// and 256 KiB segments. With retention the checkers judge only what
	// the final read still finds (records below its log start count as
	// trimmed).
	TopicConfig *client.TopicConfig
	Followers   int // readers tailing from chosen offsets; default 2
	Groups      int // consumer groups, one member each; default 2
	Seed        int64
	// Producer configures the producers; zero fields take the workload's
	// defaults (short timeouts, so faults produce retries and unknown
	// outcomes within a run).
	Producer client.ProducerOptions
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
}

func (c *WorkloadConfig) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Topic == "" {
		c.Topic = "torture"
	}
	if c.Partitions <= 0 {
		c.Partitions = 3
	}
	def(&c.Producers, 3)
	def(&c.KeysPerProducer, 4)
	def(&c.ProduceRate, 100)
	def(&c.MaxOutstanding, 32)
	def(&c.Followers, 2)
	def(&c.Groups, 2)
	p := &c.Producer
	if p.Linger == 0 {
		p.Linger = 2 * time.Millisecond
	}
	if p.RequestTimeout == 0 {
		p.RequestTimeout = 1500 * time.Millisecond
	}
	if p.DeliveryTimeout == 0 {
		p.DeliveryTimeout = 4 * time.Second
	}
	if p.RetryBackoff == 0 {
		p.RetryBackoff = 50 * time.Millisecond
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// readMaxBytes bounds one partition's fetch by followers and group members:
// many small reads give the checkers finer-grained observations and keep a
// long run's history small.
const readMaxBytes = 64 << 10

// Workload drives producers, followers, consumer groups and an observer of
// committed offsets against a Cluster, recording every operation.
type Workload struct {
	cfg     WorkloadConfig
	cluster Cluster
	h       *History
	started time.Time    // wall clock when Run began: seeks by time ask after it
	procs   atomic.Int64 // process ids handed out
	wg      sync.WaitGroup

	// values interns record values read: a long run reads each record
	// many times, and the history keeps every read.
	valuesMu sync.Mutex
	values   map[string]string
}

func (w *Workload) intern(b []byte) string {
	w.valuesMu.Lock()
	defer w.valuesMu.Unlock()
	if s, ok := w.values[string(b)]; ok {
		return s
	}
	if w.values == nil {
		w.values = map[string]string{}
	}
	s := string(b)
	w.values[s] = s
	return s
}

// NewWorkload returns a workload recording into h.
func NewWorkload(c Cluster, h *History, cfg WorkloadConfig) *Workload {
	cfg.setDefaults()
	return &Workload{cfg: cfg, cluster: c, h: h}
}

// Config is the workload's configuration, defaults applied.
func (w *Workload) Config() WorkloadConfig { return w.cfg }

func (w *Workload) process() int { return int(w.procs.Add(1)) - 1 }

func (w *Workload) rng(salt int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(salt)))
}

// dial connects to a node chosen by rng.
func (w *Workload) dial(rng *rand.Rand) (*client.Client, error) {
	return client.Dial(w.cluster.Addr(rng.IntN(w.cluster.Size())), client.WithCallTimeout(3*time.Second))
}

// Setup creates the topic, retrying until a node answers (or ctx ends).
func (w *Workload) Setup(ctx context.Context) error {
	c, err := client.Dial(w.cluster.Addr(0), client.WithCallTimeout(3*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		tc := client.TopicConfig{
			RetentionTime: client.Unlimited, RetentionBytes: client.Unlimited, RetentionRecords: client.Unlimited,
			SegmentBytes: 256 << 10, // many segments: rolls and indexes under fire
		}
		if w.cfg.TopicConfig != nil {
			tc = *w.cfg.TopicConfig
		}
		_, err := c.Admin().CreateTopic(ctx, w.cfg.Topic, w.cfg.Partitions, 0, tc)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("torture: create topic %q: %w", w.cfg.Topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Run starts every client and returns at once; Wait waits for them after
// ctx ends (producers first deliver or fail what they hold).
func (w *Workload) Run(ctx context.Context) {
	w.started = time.Now()
	for i := range w.cfg.Producers {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.produce(ctx, i) }()
	}
	for i := range w.cfg.Followers {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.follow(ctx, i) }()
	}
	for i := range w.cfg.Groups {
		group := fmt.Sprintf("group-%d", i)
		w.wg.Add(2)
		go func() { defer w.wg.Done(); w.consumeGroup(ctx, i, group) }()
		go func() { defer w.wg.Done(); w.observe(ctx, i, group) }()
	}
}

// Wait waits for the clients started by Run.
func (w *Workload) Wait() { w.wg.Wait() }

// produce runs producer id: records of its keys, paced at ProduceRate, at
// most MaxOutstanding unacknowledged.
func (w *Workload) produce(ctx context.Context, id int) {
	rng := w.rng(1000 + id)
	proc := w.process()
	c, err := w.dial(rng)
	if err != nil {
		w.cfg.Logf("producer %d: %v", id, err)
		return
	}
	defer c.Close()
	p := c.NewProducer(w.cfg.Producer)
	sem := make(chan struct{}, w.cfg.MaxOutstanding)
	seqs := make([]int64, w.cfg.KeysPerProducer)
	tick := time.NewTicker(time.Second / time.Duration(w.cfg.ProduceRate))
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		k := rng.IntN(len(seqs))
		seqs[k]++
		v := Value{Producer: id, Key: KeyName(id, k), Seq: seqs[k]}
		op := Op{Process: proc, Kind: OpProduce, Producer: id, Key: v.Key, Seq: v.Seq, Value: v.String()}
		var inCall atomic.Bool
		inCall.Store(true)
		op.Invoke = w.h.Now()
		p.ProduceFunc(ctx, client.Record{Topic: w.cfg.Topic, Key: []byte(v.Key), Value: []byte(op.Value)}, func(ack client.Ack, err error) {
			op.Complete = w.h.Now()
			switch {
			case err == nil:
				op.Outcome, op.Partition, op.Offset, op.Duplicate = OutcomeOK, ack.Partition, ack.Offset, ack.Duplicate
			case inCall.Load():
				// Failed before it was queued: never sent.
				op.Outcome, op.Err = OutcomeFail, err.Error()
			default:
				op.Outcome, op.Err = OutcomeUnknown, err.Error()
			}
			w.h.Add(op)
			<-sem
		})
		inCall.Store(false)
	}
	// Deliver what is queued: Close retries each batch until it is
	// acknowledged or its DeliveryTimeout passes; every callback has run
	// when it returns.
	p.Close()
}

// recordPoll records one Poll as a read per partition: the records it
// returned from the position each partition had before, and the position
// after. An empty Poll is an empty read of every partition (each was
// fetched and had nothing); a failed Poll is recorded as failed.
func (w *Workload) recordPoll(cons *client.Consumer, proc int, group string, final bool,
	poll func() ([]client.ConsumedRecord, error)) ([]client.ConsumedRecord, error) {
	before := map[int32]int64{}
	for _, p := range cons.Partitions() {
		before[p], _ = cons.Position(p)
	}
	inv := w.h.Now()
	recs, err := poll()
	comp := w.h.Now()
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			w.h.Add(Op{Process: proc, Kind: OpRead, Group: group, Invoke: inv, Complete: comp, Outcome: OutcomeFail, Err: err.Error(), Final: final})
		}
		return nil, err
	}
	byPart := map[int32][]ReadRecord{}
	for _, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], ReadRecord{Offset: r.Offset, Value: w.intern(r.Value), Timestamp: r.Timestamp.UnixMilli()})
	}
	for _, p := range cons.Partitions() {
		next, _ := cons.Position(p)
		if len(byPart[p]) == 0 && next == before[p] && (len(recs) > 0 || final) {
			// Cancelled by a sibling that had records, or (final reads do
			// not follow) not fetched at all: says nothing.
			continue
		}
		w.h.Add(Op{Process: proc, Kind: OpRead, Group: group, Partition: p, From: before[p], Next: next,
			Records: byPart[p], Invoke: inv, Complete: comp, Outcome: OutcomeOK, Final: final})
	}
	return recs, nil
}

// follow runs follower id: it reads one partition from a chosen position
// (earliest, latest, or an offset up to the high watermark) and tails it
// for a while, then chooses again.
func (w *Workload) follow(ctx context.Context, id int) {
	rng := w.rng(2000 + id)
	proc := w.process()
	c, err := w.dial(rng)
	if err != nil {
		w.cfg.Logf("follower %d: %v", id, err)
		return
	}
	defer c.Close()
	for ctx.Err() == nil {
		part := rng.Int32N(w.cfg.Partitions)
		var start client.Position
		switch rng.IntN(4) {
		case 0:
			start = client.Earliest()
		case 1:
			start = client.Latest()
		case 2:
			off, ok := w.seekTime(ctx, c, proc, part, rng)
			if !ok {
				sleep(ctx, 100*time.Millisecond)
				continue
			}
			start = client.AtOffset(off)
		default:
			offs, err := c.Admin().ListOffsets(ctx, w.cfg.Topic, []int32{part}, client.Latest())
			if err != nil || len(offs) == 0 {
				sleep(ctx, 100*time.Millisecond)
				continue
			}
			start = client.AtOffset(rng.Int64N(offs[0].HighWatermark + 1))
		}
		cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: w.cfg.Topic, Partitions: []int32{part},
			Start: start, Follow: true, MaxWait: 300 * time.Millisecond, MaxBytes: readMaxBytes})
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for range 5 + rng.IntN(50) {
			if ctx.Err() != nil {
				break
			}
			_, err := w.recordPoll(cons, proc, "", false, func() ([]client.ConsumedRecord, error) {
				pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				return cons.Poll(pctx)
			})
			reseek(ctx, cons, err)
		}
		cons.Close()
	}
}

// seekTime resolves a random time since the run began to an offset of
// part, recording it.
func (w *Workload) seekTime(ctx context.Context, c *client.Client, proc int, part int32, rng *rand.Rand) (int64, bool) {
	from, to := w.started.UnixMilli(), time.Now().UnixMilli()
	ts := from + rng.Int64N(to-from+1)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	op := Op{Process: proc, Kind: OpSeekTime, Partition: part, TimeMs: ts, Invoke: w.h.Now()}
	offs, err := c.Admin().ListOffsets(cctx, w.cfg.Topic, []int32{part}, client.AtTime(time.UnixMilli(ts)))
	op.Complete = w.h.Now()
	if err != nil || len(offs) != 1 {
		op.Outcome = OutcomeFail
		if err != nil {
			op.Err = err.Error()
		}
		w.h.Add(op)
		return 0, false
	}
	op.Outcome, op.Offset, op.HighWatermark = OutcomeOK, offs[0].Offset, offs[0].HighWatermark
	w.h.Add(op)
	return op.Offset, true
}

// reseek moves a consumer whose position retention removed to the log
// start, as a consumer with auto.offset.reset=earliest does.
func reseek(ctx context.Context, cons *client.Consumer, err error) {
	var oor *client.OutOfRangeError
	if errors.As(err, &oor) {
		cons.SeekPartition(ctx, oor.Partition, client.Earliest())
	}
}

// consumeGroup runs group's one member: it reads every partition from the
// group's committed offsets, commits its position every few polls, and
// after a while leaves, sometimes resets a partition's committed offset to
// an earlier one, and rejoins.
func (w *Workload) consumeGroup(ctx context.Context, id int, group string) {
	rng := w.rng(3000 + id)
	proc := w.process()
	c, err := w.dial(rng)
	if err != nil {
		w.cfg.Logf("group %s: %v", group, err)
		return
	}
	defer c.Close()
	admin := c.Admin()
	for ctx.Err() == nil {
		cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: w.cfg.Topic, Group: group,
			Start: client.Earliest(), Follow: true, MaxWait: 300 * time.Millisecond, MaxBytes: readMaxBytes})
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for i := range 10 + rng.IntN(40) {
			if ctx.Err() != nil {
				break
			}
			_, err := w.recordPoll(cons, proc, group, false, func() ([]client.ConsumedRecord, error) {
				pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				return cons.Poll(pctx)
			})
			reseek(ctx, cons, err)
			if i%5 == 4 {
				w.commit(ctx, cons, proc, group)
			}
		}
		cons.Close()
		if rng.IntN(4) == 0 && ctx.Err() == nil {
			w.reset(ctx, admin, proc, group, rng)
		}
	}
}

// commit commits the consumer's position of every partition, one RPC,
// recorded as one commit per partition.
func (w *Workload) commit(ctx context.Context, cons *client.Consumer, proc int, group string) {
	offs := map[int32]int64{}
	for _, p := range cons.Partitions() {
		offs[p], _ = cons.Position(p)
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	inv := w.h.Now()
	err := cons.CommitOffsets(cctx, offs)
	comp := w.h.Now()
	for p, off := range offs {
		op := Op{Process: proc, Kind: OpCommit, Group: group, Partition: p, Offset: off, Invoke: inv, Complete: comp, Outcome: OutcomeOK}
		if err != nil {
			op.Outcome, op.Err = OutcomeUnknown, err.Error()
		}
		w.h.Add(op)
	}
}

// reset sets one partition's committed offset of group back to a random
// offset at or below it (an operator's explicit rewind).
func (w *Workload) reset(ctx context.Context, admin *client.Admin, proc int, group string, rng *rand.Rand) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	part := rng.Int32N(w.cfg.Partitions)
	offs, err := admin.FetchOffsets(cctx, group, w.cfg.Topic)
	if err != nil {
		return
	}
	var cur int64 = -1
	for _, o := range offs {
		if o.Partition == part {
			cur = o.Offset
		}
	}
	if cur <= 0 {
		return
	}
	to := rng.Int64N(cur)
	inv := w.h.Now()
	_, err = admin.ResetOffsets(cctx, group, w.cfg.Topic, part, client.AtOffset(to))
	op := Op{Process: proc, Kind: OpReset, Group: group, Partition: part, Offset: to, Invoke: inv, Complete: w.h.Now(), Outcome: OutcomeOK}
	if err != nil {
		op.Outcome, op.Err = OutcomeUnknown, err.Error()
	}
	w.h.Add(op)
}

// observe reads group's committed offsets every few hundred milliseconds;
// a partition without one is observed as -1.
func (w *Workload) observe(ctx context.Context, id int, group string) {
	rng := w.rng(4000 + id)
	proc := w.process()
	c, err := w.dial(rng)
	if err != nil {
		return
	}
	defer c.Close()
	for ctx.Err() == nil {
		sleep(ctx, time.Duration(100+rng.IntN(200))*time.Millisecond)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		inv := w.h.Now()
		offs, err := c.Admin().FetchOffsets(cctx, group, w.cfg.Topic)
		comp := w.h.Now()
		cancel()
		if err != nil {
			continue
		}
		seen := map[int32]int64{}
		for _, o := range offs {
			seen[o.Partition] = o.Offset
		}
		for p := range w.cfg.Partitions {
			off, ok := seen[p]
			if !ok {
				off = -1
			}
			w.h.Add(Op{Process: proc, Kind: OpObserve, Group: group, Partition: p, Offset: off, Invoke: inv, Complete: comp, Outcome: OutcomeOK})
		}
	}
}

// CheckAvailable produces one record to each partition, each within
// timeout, recording them like the workload's: after the nemeses stopped,
// every partition must accept appends again.
func (w *Workload) CheckAvailable(ctx context.Context, timeout time.Duration) error {
	c, err := client.Dial(w.cluster.Addr(0), client.WithCallTimeout(timeout))
	if err != nil {
		return err
	}
	defer c.Close()
	opts := w.cfg.Producer
	opts.DeliveryTimeout = timeout
	p := c.NewProducer(opts)
	defer p.Close()
	proc, id := w.process(), w.cfg.Producers // a producer id no workload producer has
	var errs []error
	for part := range w.cfg.Partitions {
		v := Value{Producer: id, Key: fmt.Sprintf("available-%d", part), Seq: 1}
		op := Op{Process: proc, Kind: OpProduce, Producer: id, Key: v.Key, Seq: v.Seq, Value: v.String(), Invoke: w.h.Now()}
		ack, err := p.Produce(ctx, client.Record{Topic: w.cfg.Topic, Partition: client.ToPartition(part), Key: []byte(v.Key), Value: []byte(op.Value)}).Get(ctx)
		op.Complete = w.h.Now()
		if err != nil {
			op.Outcome, op.Err = OutcomeUnknown, err.Error()
			errs = append(errs, fmt.Errorf("partition %d accepts no append %s after the faults stopped: %w", part, timeout, err))
		} else {
			op.Outcome, op.Partition, op.Offset, op.Duplicate = OutcomeOK, ack.Partition, ack.Offset, ack.Duplicate
		}
		w.h.Add(op)
	}
	return errors.Join(errs...)
}

// FinalRead reads every partition from its log start to its high
// watermark, retrying failed polls until ctx ends. Call it after the
// nemeses stopped and the producers finished.
func (w *Workload) FinalRead(ctx context.Context) error {
	proc := w.process()
	c, err := client.Dial(w.cluster.Addr(0), client.WithCallTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	var cons *client.Consumer
	for {
		cons, err = c.NewConsumer(ctx, client.ConsumerOptions{Topic: w.cfg.Topic, Start: client.Earliest()})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("torture: final read: %w", err)
		}
		sleep(ctx, 200*time.Millisecond)
	}
	defer cons.Close()
	for {
		_, err := w.recordPoll(cons, proc, "", true, func() ([]client.ConsumedRecord, error) {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return cons.Poll(pctx)
		})
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("torture: final read: %w", err)
		case err != nil:
			reseek(ctx, cons, err)
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
