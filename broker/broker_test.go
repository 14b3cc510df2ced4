package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
)

func open(t *testing.T) *broker.Broker {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	b.Ready(broker.Node{APIAddr: "127.0.0.1:1"})
	return b
}

func records(vals ...string) []byte {
	var recs []batch.Record
	for _, v := range vals {
		recs = append(recs, batch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(v)})
	}
	return batch.Encode(nil, 0, batch.NoProducer, recs)
}

func createTopic(t *testing.T, b *broker.Broker, name string, parts int32) {
	t.Helper()
	c := partition.DefaultConfig(name)
	c.Partitions = parts
	if _, err := b.CreateTopic(context.Background(), "", c); err != nil {
		t.Fatal(err)
	}
}

func TestTopicsAndErrors(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 2)
	c := partition.DefaultConfig("t")
	c.Partitions = 1
	if _, err := b.CreateTopic(ctx, "", c); !errors.Is(err, broker.ErrTopicExists) {
		t.Fatalf("create twice: %v, want ErrTopicExists", err)
	}
	c.Name = "bad name/"
	if _, err := b.CreateTopic(ctx, "", c); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("bad name: %v, want kind.ErrInvalidArgument", err)
	}
	info, err := b.Topic(ctx, "", "t")
	if err != nil || len(info.Partitions) != 2 || info.Partitions[1].Leader != broker.SelfID {
		t.Fatalf("topic: %+v %v", info, err)
	}
	if _, err := b.Topic(ctx, "", "nope"); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	nodes, err := b.Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].APIAddr != "127.0.0.1:1" || nodes[0].KafkaID != 1 {
		t.Fatalf("nodes: %+v %v", nodes, err)
	}
	if _, err := b.Coordinator(); err != nil {
		t.Fatalf("a node that runs alone coordinates groups: %v", err)
	}
	if err := b.Join(ctx, "", broker.Node{ID: "x"}, false); !errors.Is(err, kind.ErrFailedPrecondition) {
		t.Fatalf("join a single node: %v", err)
	}
}

func TestProduceErrors(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	cases := []struct {
		r    broker.ProduceRequest
		want error
	}{
		{broker.ProduceRequest{Topic: "nope", Batch: records("a")}, broker.ErrUnknownTopic},
		{broker.ProduceRequest{Topic: "t", Partition: 3, Batch: records("a")}, broker.ErrUnknownPartition},
		{broker.ProduceRequest{Topic: "t", Batch: []byte("not a batch")}, broker.ErrInvalidBatch},
		{broker.ProduceRequest{Topic: "t", Batch: make([]byte, broker.DefaultMaxBatchBytes+1)}, broker.ErrBatchTooLarge},
	}
	for _, c := range cases {
		if _, err := b.Produce(ctx, c.r); !errors.Is(err, c.want) {
			t.Errorf("produce %s/%d: %v, want %v", c.r.Topic, c.r.Partition, err, c.want)
		}
	}
}

// StartProduce pipelines: writes started in order get consecutive
// offsets whatever order they are waited for in.
func TestStartProducePipelines(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	var waits []broker.ProduceFuture
	for range 3 {
		w, err := b.StartProduce(ctx, broker.ProduceRequest{Topic: "t", Batch: records("a", "b")})
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	for i := len(waits) - 1; i >= 0; i-- {
		res, err := waits[i].Wait()
		if err != nil || res.BaseOffset != int64(2*i) || res.LastOffset != int64(2*i+1) {
			t.Fatalf("write %d: %+v %v", i, res, err)
		}
	}
}

func TestFetchManyPartitions(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 2)
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: records("a", "b", "c")}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Fetch(ctx, broker.FetchRequest{Partitions: []broker.FetchPartition{
		{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 0, Offset: 99}, {Topic: "nope"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	p := res.Partitions
	if p[0].Err != nil || p[0].Records != 3 || p[0].NextOffset != 3 || p[0].HighWatermark != 3 || len(p[0].Batches) == 0 {
		t.Fatalf("partition 0: %+v", p[0])
	}
	if p[1].Err != nil || len(p[1].Batches) != 0 || p[1].NextOffset != 0 {
		t.Fatalf("partition 1: %+v", p[1])
	}
	var oor *broker.OutOfRangeError
	if !errors.As(p[2].Err, &oor) || oor.HighWatermark != 3 {
		t.Fatalf("offset 99: %v, want OutOfRangeError to 3", p[2].Err)
	}
	if !errors.Is(p[3].Err, broker.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", p[3].Err)
	}
}

// A fetch with nothing to read waits for the next commit, and a
// shutdown ends the wait.
func TestFetchLongPoll(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 2)
	got := make(chan broker.FetchResult, 1)
	go func() {
		res, err := b.Fetch(ctx, broker.FetchRequest{MaxWait: time.Minute,
			Partitions: []broker.FetchPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}})
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Partition: 1, Batch: records("x")}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-got:
		res.Release()
		if res.Partitions[1].Records != 1 {
			t.Fatalf("after a produce: %+v", res.Partitions)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fetch did not wake at the produce")
	}
	go func() {
		res, err := b.Fetch(ctx, broker.FetchRequest{MaxWait: time.Minute,
			Partitions: []broker.FetchPartition{{Topic: "t", Partition: 0}}})
		// The fetch may start after Shutdown (it is refused) or wait
		// and end with it (an empty answer).
		if err != nil && !errors.Is(err, kind.ErrShuttingDown) {
			t.Error(err)
		}
		got <- res
	}()
	time.Sleep(10 * time.Millisecond)
	b.Shutdown()
	select {
	case res := <-got:
		if res.Release != nil {
			res.Release()
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fetch did not end at shutdown")
	}
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: records("x")}); !errors.Is(err, kind.ErrShuttingDown) {
		t.Fatalf("produce after shutdown: %v", err)
	}
}

func TestOffsets(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	createTopic(t, b, "t", 1)
	if _, err := b.Produce(ctx, broker.ProduceRequest{Topic: "t", Batch: records("a", "b")}); err != nil {
		t.Fatal(err)
	}
	if off, _, err := b.ListOffset(ctx, "", "t", 0, broker.Latest); err != nil || off != 2 {
		t.Fatalf("latest: %d %v", off, err)
	}
	if off, _, err := b.ListOffset(ctx, "", "t", 0, broker.Earliest); err != nil || off != 0 {
		t.Fatalf("earliest: %d %v", off, err)
	}
	if err := b.CommitOffsets(ctx, "", "g", "", -1, []offsets.Committed{{Topic: "t", Offset: 3}}); !errors.Is(err, kind.ErrInvalidArgument) {
		t.Fatalf("commit past the high watermark: %v", err)
	}
	if err := b.CommitOffsets(ctx, "", "g", "", -1, []offsets.Committed{{Topic: "t", Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	cs, err := b.FetchOffsets(ctx, "", "g", nil)
	if err != nil || len(cs) != 1 || cs[0].Offset != 1 {
		t.Fatalf("fetch offsets: %+v %v", cs, err)
	}
	lag := b.Lag(ctx, "g", cs)
	if !lag[0].Known || lag[0].Lag != 1 || lag[0].HighWatermark != 2 {
		t.Fatalf("lag: %+v", lag)
	}
	reset, err := b.ResolveReset(ctx, "", "t", nil, offsets.ResetSpec{Kind: offsets.ResetLatest})
	if err != nil || len(reset) != 1 || reset[0].Offset != 2 {
		t.Fatalf("reset to latest: %+v %v", reset, err)
	}
	if gs, err := b.ListGroups(ctx, ""); err != nil || len(gs) != 1 || gs[0] != "g" {
		t.Fatalf("groups: %v %v", gs, err)
	}
}
