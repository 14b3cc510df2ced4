package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logd/logd/client"
)

// CompactedWorkload drives the compacted topic's producers and scanners
// (see CompactedConfig) beside a main Workload, whose cluster, clients'
// options, seed, process ids and quiet windows it shares.
type CompactedWorkload struct {
	cfg CompactedConfig
	w   *Workload
	h   *KVHistory
	wg  sync.WaitGroup
}

// NewCompactedWorkload returns the compacted workload beside w, recording
// into h.
func NewCompactedWorkload(w *Workload, h *KVHistory, cfg CompactedConfig) *CompactedWorkload {
	cfg.setDefaults()
	return &CompactedWorkload{cfg: cfg, w: w, h: h}
}

// Config is the workload's configuration, defaults applied.
func (cw *CompactedWorkload) Config() CompactedConfig { return cw.cfg }

// Setup creates the compacted topic, retrying until a node answers (or
// ctx ends); a replica on every node, up to 3, as Workload.Setup.
func (cw *CompactedWorkload) Setup(ctx context.Context) error {
	return cw.w.createTopic(ctx, cw.cfg.Topic, client.TopicOptions{Partitions: cw.cfg.Partitions, Config: cw.cfg.topicConfig()})
}

// Run starts the producers and scanners and returns at once; Wait waits
// for them after ctx ends. Call it after the main workload's Run.
func (cw *CompactedWorkload) Run(ctx context.Context) {
	for i := range cw.cfg.Producers {
		cw.wg.Go(func() { cw.produce(ctx, i) })
	}
	for i := range cw.cfg.Scanners {
		cw.wg.Go(func() { cw.scanLoop(ctx, i) })
	}
}

// Wait waits for the clients started by Run.
func (cw *CompactedWorkload) Wait() { cw.wg.Wait() }

// produce runs producer id: puts and tombstones of its keys, paced at
// ProduceRate, at most MaxOutstanding unacknowledged.
func (cw *CompactedWorkload) produce(ctx context.Context, id int) {
	rng := cw.w.rng(5000 + id)
	proc := cw.w.process()
	c, err := cw.w.dial(rng)
	if err != nil {
		cw.w.cfg.Logf("compacted producer %d: %v", id, err)
		return
	}
	defer c.Close()
	p := c.NewProducer(cw.w.cfg.Producer)
	var keys []string
	for i := id; i < cw.cfg.Keys; i += cw.cfg.Producers {
		keys = append(keys, kvKey(i))
	}
	seqs := make([]int64, len(keys))
	sem := make(chan struct{}, cw.cfg.MaxOutstanding)
	tick := time.NewTicker(time.Second / time.Duration(cw.cfg.ProduceRate))
	defer tick.Stop()
	for cw.w.waitQuiet(ctx) {
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
		k := rng.IntN(len(keys))
		seqs[k]++
		op := KVOp{Process: proc, Kind: KVPut, Key: keys[k], Seq: seqs[k]}
		if rng.IntN(cw.cfg.TombstoneEvery) == 0 {
			op.Kind = KVDelete
		}
		cw.send(ctx, p, op, func() { <-sem })
	}
	// Close delivers or fails what is queued; every callback has run when
	// it returns.
	p.Close()
}

// send produces op's record and records its outcome, then calls release.
func (cw *CompactedWorkload) send(ctx context.Context, p *client.Producer, op KVOp, release func()) {
	var inCall atomic.Bool
	inCall.Store(true)
	op.Invoke = cw.h.Now()
	p.ProduceFunc(ctx, kvRecord(cw.cfg.Topic, op), func(ack client.Ack, err error) {
		op.Complete = cw.h.Now()
		switch {
		case err == nil:
			op.Outcome, op.Partition, op.Offset, op.Duplicate = OutcomeOK, ack.Partition, ack.Offset, ack.Duplicate
		case inCall.Load():
			// Failed before it was queued: never sent.
			op.Outcome, op.Err = OutcomeFail, err.Error()
		default:
			op.Outcome, op.Err = OutcomeUnknown, err.Error()
		}
		cw.h.Add(op)
		release()
	})
	inCall.Store(false)
}

// scanLoop runs scanner id: a scan of the whole topic every ScanEvery.
func (cw *CompactedWorkload) scanLoop(ctx context.Context, id int) {
	rng := cw.w.rng(6000 + id)
	proc := cw.w.process()
	c, err := cw.w.dial(rng)
	if err != nil {
		cw.w.cfg.Logf("compacted scanner %d: %v", id, err)
		return
	}
	defer c.Close()
	for cw.w.waitQuiet(ctx) {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		op := cw.scan(sctx, c, proc, 0)
		cancel()
		if ctx.Err() == nil {
			cw.h.Add(op)
		}
		sleep(ctx, cw.cfg.ScanEvery)
	}
}

// scan reads every partition from its start to the high watermark it had
// when the scan began, retrying failed polls until ctx ends. The op is OK
// only when the scan reached the end.
func (cw *CompactedWorkload) scan(ctx context.Context, c *client.Client, proc, final int) KVOp {
	op := KVOp{Process: proc, Kind: KVScan, Final: final, Invoke: cw.h.Now()}
	fail := func(err error) KVOp {
		op.Complete, op.Outcome, op.Err, op.Records = cw.h.Now(), OutcomeFail, err.Error(), nil
		return op
	}
	cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: cw.cfg.Topic, Start: client.Earliest(),
		IgnoreCommitted: true, MaxBytes: readMaxBytes})
	if err != nil {
		return fail(err)
	}
	defer cons.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		recs, err := cons.Poll(pctx)
		cancel()
		switch {
		case errors.Is(err, io.EOF):
			op.Complete, op.Outcome = cw.h.Now(), OutcomeOK
			return op
		case err != nil && ctx.Err() != nil:
			return fail(err)
		case err != nil:
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		for _, r := range recs {
			op.Records = append(op.Records, parseKVRecord(r))
		}
	}
}

// FinalRead runs the two final scans after the producers finished, each
// retried until it reaches the end or ctx ends.
func (cw *CompactedWorkload) FinalRead(ctx context.Context) error {
	proc := cw.w.process()
	c, err := client.Dial(cw.w.cluster.Addr(0), client.WithCallTimeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("torture: compacted final read: %w", err)
	}
	defer c.Close()
	for final := 1; final <= 2; final++ {
		for {
			op := cw.scan(ctx, c, proc, final)
			if op.Outcome == OutcomeOK {
				cw.h.Add(op)
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("torture: compacted final read %d: %s", final, op.Err)
			}
			sleep(ctx, 200*time.Millisecond)
		}
	}
	return nil
}

// compactedRun is a Run's compacted workload; its methods do nothing on
// nil (a run without one).
type compactedRun struct {
	cw *CompactedWorkload
	h  *KVHistory
}

// setupCompacted creates cfg's topic beside w's (nil cfg: no compacted
// workload).
func setupCompacted(ctx context.Context, w *Workload, h *History, cfg *CompactedConfig) (*compactedRun, error) {
	if cfg == nil {
		return nil, nil
	}
	r := &compactedRun{h: NewKVHistory(h)}
	r.cw = NewCompactedWorkload(w, r.h, *cfg)
	if err := r.cw.Setup(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *compactedRun) run(ctx context.Context) {
	if r != nil {
		r.cw.Run(ctx)
	}
}

func (r *compactedRun) wait() {
	if r != nil {
		r.cw.Wait()
	}
}

// finalRead runs the final scans, within 2 minutes; a failure is one of
// rep's errors.
func (r *compactedRun) finalRead(ctx context.Context, rep *Report) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := r.cw.FinalRead(ctx); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
}

// judge adds CheckCompacted's verdict to rep and writes the history into
// dir (compacted-history.json.gz). Call it after Report.check.
func (r *compactedRun) judge(rep *Report, dir string) error {
	if r == nil {
		return nil
	}
	v := CheckCompacted(r.h.Ops(), r.cw.cfg.DeleteRetention)
	rep.Verdicts = append(rep.Verdicts, v)
	rep.Valid = rep.Valid && v.OK()
	path := filepath.Join(dir, "compacted-history.json.gz")
	rep.Files = append(rep.Files, path)
	return r.h.WriteFile(path)
}
