package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/logd/logd/client"
)

// The key-value view workload (kvview_run.go) runs beside the main one,
// on a compacted topic of its own: clients connected to random nodes get,
// put, compare-and-set and delete a few keys through the client
// library's KV view (client.KV). It records into a ViewHistory of its
// own; CheckKVView judges it against a register per key with porcupine.

// KVViewConfig configures the key-value view workload. Zero values take
// the defaults.
type KVViewConfig struct {
	Topic      string // default "torture-kv"
	Partitions int32  // default 2
	// Clients each run one operation at a time (default 4).
	Clients int
	// Keys are shared by every client, so that their writes race
	// (default 16).
	Keys int
	// Rate is each client's operations per second (default 20).
	Rate int
	// OpTimeout bounds one operation (default 5s); an operation that runs
	// out has an unknown outcome.
	OpTimeout time.Duration
	// The topic's configuration, as CompactedConfig's (defaults 16 KiB
	// segments, min.compaction.lag 10s, delete.retention 5s, dirty ratio
	// 0.1), so that the cleaner rewrites what the index points at during
	// the run.
	SegmentBytes     int64
	MinCompactionLag time.Duration
	DeleteRetention  time.Duration
	DirtyRatio       float64
}

func (c *KVViewConfig) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Topic == "" {
		c.Topic = "torture-kv"
	}
	if c.Partitions <= 0 {
		c.Partitions = 2
	}
	def(&c.Clients, 4)
	def(&c.Keys, 16)
	def(&c.Rate, 20)
	if c.OpTimeout <= 0 {
		c.OpTimeout = 5 * time.Second
	}
	cc := CompactedConfig{SegmentBytes: c.SegmentBytes, MinCompactionLag: c.MinCompactionLag,
		DeleteRetention: c.DeleteRetention, DirtyRatio: c.DirtyRatio}
	cc.setDefaults()
	c.SegmentBytes, c.MinCompactionLag, c.DeleteRetention, c.DirtyRatio = cc.SegmentBytes, cc.MinCompactionLag, cc.DeleteRetention, cc.DirtyRatio
}

// topicConfig is the view's topic configuration.
func (c *KVViewConfig) topicConfig() client.TopicConfig {
	cc := CompactedConfig{SegmentBytes: c.SegmentBytes, MinCompactionLag: c.MinCompactionLag,
		DeleteRetention: c.DeleteRetention, DirtyRatio: c.DirtyRatio}
	return cc.topicConfig()
}

// ViewOpKind is what an operation of the key-value view workload did.
type ViewOpKind string

const (
	// ViewGet is a linearizable get: Found, Value and Offset are what it
	// returned.
	ViewGet ViewOpKind = "get"
	// ViewStaleGet is a stale (local) get; it is not checked for
	// linearizability, only that it returns a value some put wrote.
	ViewStaleGet ViewOpKind = "stale-get"
	// ViewPut stores Value; Offset is where it was stored.
	ViewPut ViewOpKind = "put"
	// ViewCAS stores Value only when the key's newest record is at
	// Expected (-1: the key has no value). Refused: Latest is the offset
	// the refusal named.
	ViewCAS ViewOpKind = "cas"
	// ViewDelete stores a tombstone; with Conditional, only when the
	// key's newest record is at Expected.
	ViewDelete ViewOpKind = "delete"
)

// ViewOp is one operation of a ViewHistory. Times are nanoseconds since
// the main History began.
type ViewOp struct {
	ID       int        `json:"id"`
	Process  int        `json:"process"`
	Kind     ViewOpKind `json:"kind"`
	Key      string     `json:"key"`
	Invoke   int64      `json:"invoke_ns"`
	Complete int64      `json:"complete_ns"`
	// Outcome: OK; Fail (a refused compare-and-set, or a get that
	// failed: nothing happened); Unknown (a write that failed otherwise:
	// it may have been stored).
	Outcome Outcome `json:"outcome"`
	Err     string  `json:"err,omitempty"`

	// Value is a put's value (unique in the history), or what a get
	// returned.
	Value string `json:"value,omitempty"`
	// Offset is where a write was stored, or the offset a get returned.
	Offset int64 `json:"offset"`
	// Found: a get found the key.
	Found bool `json:"found,omitempty"`
	// Conditional writes name Expected; a refused one the Latest offset
	// its refusal named.
	Conditional bool  `json:"conditional,omitempty"`
	Expected    int64 `json:"expected"`
	Refused     bool  `json:"refused,omitempty"`
	Latest      int64 `json:"latest"`
}

func (op ViewOp) String() string {
	t := fmt.Sprintf("[%s %s]", time.Duration(op.Invoke), time.Duration(op.Complete))
	what := string(op.Kind) + " " + op.Key
	if op.Value != "" && op.Kind != ViewGet && op.Kind != ViewStaleGet {
		what += "=" + op.Value
	}
	if op.Conditional {
		what += fmt.Sprintf(" if@%d", op.Expected)
	}
	res := string(op.Outcome)
	switch {
	case op.Refused:
		res = fmt.Sprintf("refused, latest %d", op.Latest)
	case op.Outcome == OutcomeOK && (op.Kind == ViewGet || op.Kind == ViewStaleGet) && !op.Found:
		res = "not found"
	case op.Outcome == OutcomeOK && (op.Kind == ViewGet || op.Kind == ViewStaleGet):
		res = fmt.Sprintf("%s@%d", op.Value, op.Offset)
	case op.Outcome == OutcomeOK:
		res = fmt.Sprintf("ok @%d", op.Offset)
	case op.Err != "":
		res += " (" + op.Err + ")"
	}
	return fmt.Sprintf("#%d %s p%d %s -> %s", op.ID, t, op.Process, what, res)
}

// ViewHistory records the view workload's operations from many
// goroutines, on the clock of the main History.
type ViewHistory struct{ opHistory[ViewOp] }

// NewViewHistory is a history whose times are h's.
func NewViewHistory(h *History) *ViewHistory {
	return &ViewHistory{opHistory[ViewOp]{now: h.Now, id: func(op *ViewOp) *int { return &op.ID }}}
}

// KVViewWorkload drives the view's clients (see KVViewConfig) beside a
// main Workload, whose cluster, seed, process ids and quiet windows it
// shares.
type KVViewWorkload struct {
	cfg KVViewConfig
	w   *Workload
	h   *ViewHistory
	wg  sync.WaitGroup
}

// NewKVViewWorkload returns the view workload beside w, recording into h.
func NewKVViewWorkload(w *Workload, h *ViewHistory, cfg KVViewConfig) *KVViewWorkload {
	cfg.setDefaults()
	return &KVViewWorkload{cfg: cfg, w: w, h: h}
}

// Setup creates the view's compacted topic, retrying until a node
// answers (or ctx ends).
func (vw *KVViewWorkload) Setup(ctx context.Context) error {
	return vw.w.createTopic(ctx, vw.cfg.Topic, client.TopicOptions{Partitions: vw.cfg.Partitions, Config: vw.cfg.topicConfig()})
}

// Run starts the clients and returns at once; Wait waits for them after
// ctx ends.
func (vw *KVViewWorkload) Run(ctx context.Context) {
	for i := range vw.cfg.Clients {
		vw.wg.Go(func() { vw.client(ctx, i) })
	}
}

// Wait waits for the clients started by Run.
func (vw *KVViewWorkload) Wait() { vw.wg.Wait() }

// viewClient is one client's state: the offset it last saw of each key
// (-1: no value), which its compare-and-sets expect.
type viewClient struct {
	kv   *client.KV
	proc int
	rng  *rand.Rand
	seen map[string]int64
	n    int
}

// client runs client id: one operation at a time, paced at Rate.
func (vw *KVViewWorkload) client(ctx context.Context, id int) {
	rng := vw.w.rng(7000 + id)
	c, err := vw.w.dial(rng)
	if err != nil {
		vw.w.cfg.Logf("kv view client %d: %v", id, err)
		return
	}
	defer c.Close()
	vc := &viewClient{kv: c.KV(vw.cfg.Topic), proc: vw.w.process(), rng: rng, seen: map[string]int64{}}
	tick := time.NewTicker(time.Second / time.Duration(vw.cfg.Rate))
	defer tick.Stop()
	for vw.w.waitQuiet(ctx) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			continue
		}
		op := vw.one(ctx, vc)
		if op.Outcome == OutcomeFail && !op.Refused && ctx.Err() != nil {
			continue // cut off by the run's end: nothing happened
		}
		vw.h.Add(op)
	}
}

// one runs one random operation of vc's and returns it, completed.
func (vw *KVViewWorkload) one(ctx context.Context, vc *viewClient) ViewOp {
	key := fmt.Sprintf("vk%02d", vc.rng.IntN(vw.cfg.Keys))
	op := ViewOp{Process: vc.proc, Key: key, Offset: -1, Expected: -1, Latest: -1}
	expected, known := vc.seen[key]
	if !known {
		expected = -1
	}
	vc.n++
	value := fmt.Sprintf("%s/%d/%d", key, vc.proc, vc.n)
	octx, cancel := context.WithTimeout(ctx, vw.cfg.OpTimeout)
	defer cancel()
	switch r := vc.rng.IntN(100); {
	case r < 35:
		op.Kind = ViewGet
	case r < 45:
		op.Kind = ViewStaleGet
	case r < 65:
		op.Kind, op.Value = ViewPut, value
	case r < 88:
		op.Kind, op.Value, op.Conditional, op.Expected = ViewCAS, value, true, expected
	default:
		op.Kind = ViewDelete
		op.Conditional, op.Expected = r < 94, expected
	}
	op.Invoke = vw.h.Now()
	if op.Kind == ViewGet || op.Kind == ViewStaleGet {
		vw.get(octx, vc, &op)
	} else {
		vw.write(octx, vc, &op)
	}
	return op
}

// get runs a get into op.
func (vw *KVViewWorkload) get(ctx context.Context, vc *viewClient, op *ViewOp) {
	var opts []client.KVOption
	if op.Kind == ViewStaleGet {
		opts = append(opts, client.Stale())
	}
	e, found, err := vc.kv.Get(ctx, []byte(op.Key), opts...)
	op.Complete = vw.h.Now()
	if err != nil {
		op.Outcome, op.Err = OutcomeFail, err.Error()
		return
	}
	op.Outcome, op.Found = OutcomeOK, found
	if found {
		op.Value, op.Offset = string(e.Value), e.Offset
		vc.seen[op.Key] = e.Offset
	} else if op.Kind == ViewGet {
		vc.seen[op.Key] = -1
	}
}

// write runs a put, compare-and-set or delete into op.
func (vw *KVViewWorkload) write(ctx context.Context, vc *viewClient, op *ViewOp) {
	var opts []client.KVOption
	if op.Conditional {
		opts = append(opts, client.IfOffset(op.Expected))
	}
	var err error
	if op.Kind == ViewDelete {
		op.Offset, err = vc.kv.Delete(ctx, []byte(op.Key), opts...)
	} else {
		var e client.KVEntry
		e, err = vc.kv.Put(ctx, []byte(op.Key), []byte(op.Value), opts...)
		op.Offset = e.Offset
	}
	op.Complete = vw.h.Now()
	var conflict *client.KeyConflictError
	switch {
	case err == nil:
		op.Outcome = OutcomeOK
		vc.seen[op.Key] = op.Offset
		if op.Kind == ViewDelete {
			vc.seen[op.Key] = -1
		}
	case errors.As(err, &conflict):
		op.Outcome, op.Refused, op.Latest, op.Offset = OutcomeFail, true, conflict.Latest, -1
		op.Err = err.Error()
		vc.seen[op.Key] = conflict.Latest
	default:
		op.Outcome, op.Err, op.Offset = OutcomeUnknown, err.Error(), -1
		delete(vc.seen, op.Key)
	}
}
