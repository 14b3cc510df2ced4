package broker

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// peerFetchMaxBytes bounds the batches of one partition a read passed on
// to its leader carries back (at least one whole batch, as any fetch): the
// answer, base64 in JSON, must fit the peer service's 4 MiB frame.
const peerFetchMaxBytes = 2 << 20

// fetchReq is a read of one partition made of its leader; fetchAnswer its
// answer.
type (
	fetchReq struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		MaxBytes  int    `json:"max_bytes"`
		MaxWaitMs int64  `json:"max_wait_ms,omitempty"`
		// ReadCommitted and DropAborted are the FetchRequest's.
		ReadCommitted bool `json:"read_committed,omitempty"`
		DropAborted   bool `json:"drop_aborted,omitempty"`
	}
	fetchAnswer struct {
		Batches       []byte       `json:"batches,omitempty"`
		NextOffset    int64        `json:"next_offset"`
		Records       int          `json:"records,omitempty"`
		HighWatermark int64        `json:"high_watermark"`
		LogStart      int64        `json:"log_start"`
		LastStable    int64        `json:"last_stable,omitempty"`
		Aborted       []AbortedTxn `json:"aborted,omitempty"`
	}
)

// peerFetch answers a read of one partition another node passed on: the
// broker's Fetch of it for pr (which authorizes it), its error the call's.
// The answer is encoded before the read budget is released.
func (b *Broker) peerFetch(ctx context.Context, pr Principal, r fetchReq) (any, error) {
	size := peerFetchMaxBytes
	if r.MaxBytes > 0 {
		size = min(r.MaxBytes, peerFetchMaxBytes)
	}
	res, err := b.Fetch(ctx, FetchRequest{Principal: pr, MinBytes: 1, MaxBytes: size,
		MaxWait:       time.Duration(r.MaxWaitMs) * time.Millisecond,
		ReadCommitted: r.ReadCommitted, DropAborted: r.DropAborted,
		Partitions: []FetchPartition{{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, MaxBytes: size}}})
	if err != nil {
		return nil, err
	}
	defer res.Release()
	fp := res.Partitions[0]
	if fp.Err != nil {
		return nil, fp.Err
	}
	// Encoded here: the batches are the read budget's until Release.
	out, err := json.Marshal(fetchAnswer{Batches: fp.Batches, NextOffset: fp.NextOffset, Records: fp.Records,
		HighWatermark: fp.HighWatermark, LogStart: fp.LogStart, LastStable: fp.LastStable, Aborted: fp.Aborted})
	if err != nil {
		return nil, err
	}
	return json.RawMessage(out), nil
}

// Fetch is Broker.Fetch with each partition this node refused untouched
// for not leading it read on its leader, one peer call per partition
// (at most peerFetchMaxBytes each), and every partition answered as one
// fetch. The read looks first without waiting; when nothing is there and
// the request waits, it waits here for the partitions led here and on
// each leader for its partition, and answers at the first that has
// records (the calls still waiting are ended, and their leaders stop
// waiting: the peer service ends a handler whose caller hung up). A live
// tail that reads each partition with a fetch
// of its own waits on one node at a time.
//
// What a leader answers counts against this node's read budget as a
// local read does, until Release.
func (f Forwarder) Fetch(ctx context.Context, r FetchRequest) (FetchResult, error) {
	b := f.b
	if b.plane.alone() {
		return b.Fetch(ctx, r)
	}
	look := r
	look.MaxWait = 0
	res, err := b.Fetch(ctx, look)
	if err != nil {
		return res, err
	}
	remote := map[int]string{} // request index -> the leader's Raft address
	for i, fp := range res.Partitions {
		if addr, ok := passOn(ctx, fp.Err); ok {
			remote[i] = addr
		}
	}
	n := 0
	for _, fp := range res.Partitions {
		n += len(fp.Batches)
	}
	wait := min(r.MaxWait, MaxWait)
	switch {
	case len(remote) == 0 && (wait == 0 || n >= max(r.MinBytes, 1)):
		return res, nil
	case len(remote) == 0:
		res.Release()
		return b.Fetch(ctx, r)
	case wait == 0 || n >= max(r.MinBytes, 1):
		return f.readRemote(ctx, ctx, r, res, remote, 0, nil), nil
	}
	res.Release()
	return f.waitAll(ctx, r, remote, wait)
}

// readRemote reads the remote partitions of r on their leaders, waiting
// up to wait for records, into res (whose local partitions are read);
// found, when set, is called at the first partition read with records or
// an error. A read ended because ctx ended while its parent (the request's
// context, which the budget is taken under) goes on is answered empty.
func (f Forwarder) readRemote(parent, ctx context.Context, r FetchRequest, res FetchResult, remote map[int]string, wait time.Duration, found func()) FetchResult {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var charged int64
	for i, addr := range remote {
		fp := r.Partitions[i]
		wg.Go(func() {
			got, err := f.readOne(ctx, r, fp, addr, wait)
			if err != nil && ctx.Err() != nil && parent.Err() == nil {
				err = nil // ended early: another partition answered
			}
			if (err != nil || len(got.Batches) > 0) && found != nil {
				found()
			}
			c := int64(0)
			if err == nil {
				c = f.b.charge(parent, r, &got, fp.Offset)
			}
			mu.Lock()
			defer mu.Unlock()
			res.Partitions[i] = got
			res.Partitions[i].Err = err
			charged += c
		})
	}
	wg.Wait()
	local := res.Release
	var once sync.Once
	res.Release = func() {
		local()
		once.Do(func() { f.b.budget.Release(charged) })
	}
	return res
}

// charge takes what fp holds from the node's read budget (as much again
// when the caller decodes), and returns what it took: a partition whose
// share the budget does not give before ctx ends is answered empty.
func (b *Broker) charge(ctx context.Context, r FetchRequest, fp *FetchedPartition, offset int64) int64 {
	n := int64(len(fp.Batches))
	if r.Decode {
		n *= 2
	}
	n = min(n, b.budget.Bytes)
	if n == 0 {
		return 0
	}
	if err := b.budget.Acquire(ctx, n); err != nil {
		fp.Batches, fp.Records, fp.NextOffset = nil, 0, offset
		return 0
	}
	return n
}

// readOne reads fp on the node at addr.
func (f Forwarder) readOne(ctx context.Context, r FetchRequest, fp FetchPartition, addr string, wait time.Duration) (FetchedPartition, error) {
	maxBytes := fp.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultFetchBytes
	}
	var a fetchAnswer
	err := f.b.peerCall(ctx, addr, opFetch, r.Principal, fetchReq{Topic: fp.Topic, Partition: fp.Partition, Offset: fp.Offset,
		MaxBytes: min(maxBytes, peerFetchMaxBytes), MaxWaitMs: wait.Milliseconds(),
		ReadCommitted: r.ReadCommitted, DropAborted: r.DropAborted}, &a)
	out := FetchedPartition{Topic: fp.Topic, Partition: fp.Partition, NextOffset: fp.Offset}
	if err != nil {
		return out, err
	}
	out.HighWatermark, out.LogStart, out.LastStable, out.Aborted = a.HighWatermark, a.LogStart, a.LastStable, a.Aborted
	if len(a.Batches) > 0 || a.NextOffset > fp.Offset {
		out.Batches, out.NextOffset, out.Records = a.Batches, a.NextOffset, a.Records
	}
	return out, nil
}

// waitAll waits, up to wait, for records in any partition of r: those led
// here by a fetch here, the others on their leaders; the first read that
// finds records (or fails) ends the others, and what each read is
// answered.
func (f Forwarder) waitAll(parent context.Context, r FetchRequest, remote map[int]string, wait time.Duration) (FetchResult, error) {
	ctx, stop := context.WithCancel(parent)
	defer stop()
	res := FetchResult{Partitions: make([]FetchedPartition, len(r.Partitions)), Release: func() {}}
	var localIdx []int
	local := r
	local.Partitions = nil
	for i, fp := range r.Partitions {
		res.Partitions[i] = FetchedPartition{Topic: fp.Topic, Partition: fp.Partition, NextOffset: fp.Offset}
		if _, ok := remote[i]; !ok {
			localIdx = append(localIdx, i)
			local.Partitions = append(local.Partitions, fp)
		}
	}
	var wg sync.WaitGroup
	var localRes FetchResult
	if len(localIdx) > 0 {
		wg.Go(func() {
			var err error
			if localRes, err = f.b.Fetch(ctx, local); err == nil {
				stop()
			}
		})
	}
	res = f.readRemote(parent, ctx, r, res, remote, wait, stop)
	stop()
	wg.Wait()
	if err := parent.Err(); err != nil {
		res.Release()
		if localRes.Release != nil {
			localRes.Release()
		}
		return FetchResult{}, err
	}
	if localRes.Release != nil {
		for j, i := range localIdx {
			res.Partitions[i] = localRes.Partitions[j]
		}
		remoteRelease := res.Release
		res.Release = func() { remoteRelease(); localRes.Release() }
	}
	return res, nil
}
