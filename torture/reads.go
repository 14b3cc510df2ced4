package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/logd/logd/client"
)

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
	for w.waitQuiet(ctx) {
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
		w.waitQuiet(ctx)
		cons, err := c.NewConsumer(ctx, client.ConsumerOptions{Topic: w.cfg.Topic, Partitions: []int32{part},
			Start: start, Follow: true, MaxWait: 300 * time.Millisecond, MaxBytes: readMaxBytes})
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for range 5 + rng.IntN(50) {
			if !w.waitQuiet(ctx) {
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
