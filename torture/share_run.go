package torture

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FinalDrain sets the group's configs again (through each node in
// turn, until one answers), then runs
// three members that accept every record until none has come for twice
// the lock duration and 6 s more (a crashed member's records are
// available again after its locks expire) and no acknowledged record is
// unsettled (shareUnsettled), or none has come for drainMaxQuiet, or ctx
// ends; then it records each partition's end and, where a node answers
// it, the share partition's start offset.
func (sw *ShareWorkload) FinalDrain(ctx context.Context) error {
	for _, a := range sw.w.kafkaAddrs(0) {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		err := sw.configure(cctx, a)
		ccancel()
		if err == nil {
			break
		}
		sw.w.cfg.Logf("share drain: %v", err)
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sw.last.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	for i := range 3 {
		rng := sw.w.rng(9500 + i)
		wg.Go(func() {
			for life := 0; dctx.Err() == nil; life++ {
				sw.member(dctx, rng, fmt.Sprintf("drain%d.%d", i, life), true)
			}
		})
	}
	quiet := 2*sw.cfg.LockDuration + 6*time.Second
	for dctx.Err() == nil {
		sleep(dctx, time.Second)
		idle := time.Since(time.Unix(0, sw.last.Load()))
		if idle >= drainMaxQuiet || idle >= quiet && shareUnsettled(sw.History()) == 0 {
			break
		}
	}
	drained := dctx.Err() == nil
	cancel()
	wg.Wait()
	sw.w.cfg.Logf("share drain over: idle %s, %d acknowledged record(s) unsettled",
		time.Since(time.Unix(0, sw.last.Load())).Round(time.Second), shareUnsettled(sw.History()))
	if !drained {
		return fmt.Errorf("torture: share drain: %w", ctx.Err())
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer fcancel()
	final, err := sw.finalState(fctx)
	sw.record(func(h *ShareHistory) { h.Final = final })
	if err != nil {
		return err
	}
	dls, err := sw.deadLetters(fctx)
	if err != nil {
		sw.w.cfg.Logf("share drain: the dead-letter topic: %v", err)
		return nil
	}
	sw.record(func(h *ShareHistory) { h.DeadLetters, h.DeadLettersRead = dls, true })
	return nil
}

// deadLetters reads the group's dead-letter topic (the share topic's
// name with ".dlq") from its start to its end: each record names its
// source record in its headers.
func (sw *ShareWorkload) deadLetters(ctx context.Context) ([]ShareDeadLetter, error) {
	topic := sw.cfg.Topic + ".dlq"
	addrs := sw.w.kafkaAddrs(0)
	adm, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err == nil {
		err = ends.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, nil // nothing was dead-lettered
	}
	if err != nil {
		return nil, err
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTimeout(2*time.Second), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []ShareDeadLetter
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%d partition(s) not read to their end: %w", len(left), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
			d := ShareDeadLetter{Partition: -1, Offset: -1, Value: string(r.Value)}
			for _, h := range r.Headers {
				n, _ := strconv.ParseInt(string(h.Value), 10, 64)
				switch h.Key {
				case "logd.dlq.partition":
					d.Partition = int32(n)
				case "logd.dlq.offset":
					d.Offset = n
				case "logd.dlq.delivery.count":
					d.Count = int32(n)
				case "logd.dlq.error":
					d.Reason = string(h.Value)
				}
			}
			out = append(out, d)
		})
	}
	return out, nil
}

// drainMaxQuiet is the longest the drain waits for a record: past the
// default lock duration (30 s), in case a node served the group without
// its configs.
const drainMaxQuiet = 36 * time.Second

// finalState is every partition's end and share start offset. The start
// is read with DescribeShareGroupOffsets from every node: in a cluster
// only the group's coordinator answers, for the partitions it leads
// (share-groups.md), so the others stay -1.
func (sw *ShareWorkload) finalState(ctx context.Context) ([]ShareFinal, error) {
	addrs := sw.w.kafkaAddrs(0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, sw.cfg.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("torture: share topic's end offsets: %w", err)
	}
	starts := map[int32]int64{}
	for _, a := range addrs {
		sw.describeStarts(ctx, a, starts)
	}
	var out []ShareFinal
	for p := range sw.cfg.Partitions {
		f := ShareFinal{Partition: p, Start: -1, End: -1}
		if o, ok := ends.Lookup(sw.cfg.Topic, p); ok {
			f.End = o.Offset
		}
		if s, ok := starts[p]; ok {
			f.Start = s
		}
		out = append(out, f)
	}
	return out, nil
}

// describeStarts adds the share start offsets the node at addr answers.
func (sw *ShareWorkload) describeStarts(ctx context.Context, addr string, starts map[int32]int64) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = sw.cfg.Group
	t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	t.Topic = sw.cfg.Topic
	for p := range sw.cfg.Partitions {
		t.Partitions = append(t.Partitions, p)
	}
	g.Topics = append(g.Topics, t)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return
	}
	for _, rg := range resp.Groups {
		if rg.ErrorCode != 0 {
			continue
		}
		for _, rt := range rg.Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == sw.cfg.Topic && rp.ErrorCode == 0 && rp.StartOffset >= 0 {
					starts[rp.Partition] = rp.StartOffset
				}
			}
		}
	}
}

// shareRun is a Run's share-group workload (nil: none).
type shareRun struct{ sw *ShareWorkload }

// setupShare creates cfg's topic and group configs beside w's (nil cfg:
// no share-group workload).
func setupShare(ctx context.Context, w *Workload, cfg *ShareConfig) (*shareRun, error) {
	if cfg == nil {
		return nil, nil
	}
	r := &shareRun{sw: NewShareWorkload(w, *cfg)}
	if err := r.sw.Setup(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *shareRun) run(ctx context.Context) {
	if r != nil {
		r.sw.Run(ctx)
	}
}

func (r *shareRun) wait() {
	if r != nil {
		r.sw.Wait()
	}
}

// finalRead drains the group, within 2 minutes; a failure is one of rep's
// errors.
func (r *shareRun) finalRead(ctx context.Context, rep *Report) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := r.sw.FinalDrain(ctx); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
	}
}

// judge adds CheckShare's verdict to rep and writes the history into dir
// (share-history.json.gz). Call it after Report.check.
func (r *shareRun) judge(rep *Report, dir string) error {
	if r == nil {
		return nil
	}
	h := r.sw.History()
	v := CheckShare(h)
	rep.Verdicts = append(rep.Verdicts, v)
	rep.Valid = rep.Valid && v.OK()
	path := filepath.Join(dir, "share-history.json.gz")
	rep.Files = append(rep.Files, path)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	err = json.NewEncoder(zw).Encode(h)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
