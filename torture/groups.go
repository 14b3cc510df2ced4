package torture

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/logd/logd/client"
)

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
	for w.waitQuiet(ctx) {
		cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: w.cfg.Topic, Group: group,
			Start: client.Earliest(), Follow: true, MaxWait: 300 * time.Millisecond, MaxBytes: readMaxBytes})
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for i := range 10 + rng.IntN(40) {
			if !w.waitQuiet(ctx) {
				break
			}
			_, err := w.recordPoll(cons, proc, group, false, func() ([]client.ConsumedRecord, error) {
				pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				return cons.Poll(pctx)
			})
			reseek(ctx, cons, err)
			if i%5 == 4 {
				w.waitQuiet(ctx)
				w.commit(ctx, cons, proc, group)
			}
		}
		cons.Close()
		if rng.IntN(4) == 0 && w.waitQuiet(ctx) {
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
		w.waitQuiet(ctx)
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
