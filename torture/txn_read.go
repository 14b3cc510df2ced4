package torture

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newReader is a read_committed reader of every partition, logging as
// name.
func (tw *TxnWorkload) newReader(node int, name string) (*kgo.Client, error) {
	parts := map[int32]kgo.Offset{}
	for p := range tw.cfg.Partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{kgo.SeedBrokers(tw.w.kafkaAddrs(node)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tw.cfg.Topic: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500 * time.Millisecond)}
	return kgo.NewClient(append(opts, tw.logs.opts(name)...)...)
}

// readLoop follows every partition read_committed until ctx ends,
// recording each fetch's records of a partition as one read from the
// position the previous one reached.
func (tw *TxnWorkload) readLoop(ctx context.Context) {
	cl, err := tw.newReader(0, "reader")
	if err != nil {
		tw.w.cfg.Logf("txn reader: %v", err)
		return
	}
	defer cl.Close()
	pos := map[int32]int64{}
	for ctx.Err() == nil {
		inv := tw.w.h.Now()
		fs := cl.PollFetches(ctx)
		tw.recordReads(fs, pos, inv, false)
	}
}

func (tw *TxnWorkload) recordReads(fs kgo.Fetches, pos map[int32]int64, inv int64, final bool) int {
	n := 0
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if fp.Err != nil || len(fp.Records) == 0 {
			return
		}
		r := TxnRead{Partition: fp.Partition, From: pos[fp.Partition], Invoke: inv, Complete: tw.w.h.Now(), Final: final}
		for _, rec := range fp.Records {
			r.Records = append(r.Records, TxnRecord{Offset: rec.Offset, Value: string(rec.Value)})
		}
		r.End = fp.Records[len(fp.Records)-1].Offset + 1
		pos[fp.Partition] = r.End
		n += len(r.Records)
		tw.record(func(h *TxnHistory) { h.Reads = append(h.Reads, r) })
	})
	return n
}

// FinalRead waits until every transaction is decided (each partition's
// last stable offset at its high watermark, within ctx), then reads
// every partition from the start read_committed until it is idle for 5
// seconds; these reads are Final.
func (tw *TxnWorkload) FinalRead(ctx context.Context) error {
	cl, err := tw.newReader(0, "final-reader")
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		hw, err1 := adm.ListEndOffsets(ctx, tw.cfg.Topic)
		lso, err2 := adm.ListCommittedOffsets(ctx, tw.cfg.Topic)
		if err1 == nil && err2 == nil && txnOffsetsEqual(hw, lso, tw.cfg.Topic, tw.cfg.Partitions) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("txn final read: transactions still open: %v", ctx.Err())
		case <-time.After(time.Second):
		}
	}
	pos := map[int32]int64{}
	inv := tw.w.h.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n := tw.recordReads(cl.PollFetches(pctx), pos, inv, true)
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("txn final read: %v", ctx.Err())
		}
		if n == 0 {
			break
		}
	}
	// Every partition has a final read, empty when it holds no
	// committed record.
	for p := range tw.cfg.Partitions {
		tw.record(func(h *TxnHistory) {
			h.Reads = append(h.Reads, TxnRead{Partition: p, From: pos[p], End: pos[p], Invoke: inv, Complete: tw.w.h.Now(), Final: true})
		})
	}
	return nil
}

func txnOffsetsEqual(a, b kadm.ListedOffsets, topic string, parts int32) bool {
	for p := range parts {
		x, ok1 := a.Lookup(topic, p)
		y, ok2 := b.Lookup(topic, p)
		if !ok1 || !ok2 || x.Err != nil || y.Err != nil || x.Offset != y.Offset {
			return false
		}
	}
	return true
}
