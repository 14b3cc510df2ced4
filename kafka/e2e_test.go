package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/internal/batch"
)

// A Kafka producer's retry (same producer id, epoch and sequence) is
// answered with the original offsets and stored once.
func TestIdempotentRetryIsStoredOnce(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "idem", 1)
	ctx := testCtx(t)
	cl := newClient(t, n.addr)
	ipr, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || ipr.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v, code %d", err, ipr.ErrorCode)
	}
	produce := func(seq int32) *kmsg.ProduceResponseTopicPartition {
		return produceIdempotent(t, cl, "idem", ipr.ProducerID, ipr.ProducerEpoch, seq)
	}
	first := produce(0)
	retry := produce(0)
	next := produce(2)
	if first.ErrorCode != 0 || retry.ErrorCode != 0 || next.ErrorCode != 0 {
		t.Fatalf("codes %d %d %d", first.ErrorCode, retry.ErrorCode, next.ErrorCode)
	}
	if retry.BaseOffset != first.BaseOffset || next.BaseOffset != first.BaseOffset+2 {
		t.Fatalf("base offsets: first %d, retry %d, next %d", first.BaseOffset, retry.BaseOffset, next.BaseOffset)
	}
	if gap := produce(7); gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("a sequence gap got code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", gap.ErrorCode)
	}
	end, err := kadm.NewClient(cl).ListEndOffsets(ctx, "idem")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("idem", 0); o.Offset != 4 {
		t.Fatalf("end offset %d, want 4 (the retry stored once)", o.Offset)
	}
}

// produceIdempotent sends one batch of two records as producer id at
// epoch and seq, and returns the partition's answer.
func produceIdempotent(t *testing.T, cl *kgo.Client, topic string, id int64, epoch int16, seq int32) *kmsg.ProduceResponseTopicPartition {
	t.Helper()
	recs := []batch.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("a")}, {Timestamp: time.Now().UnixMilli(), Value: []byte("b")}}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch.Encode(nil, 0, batch.Producer{ID: id, Epoch: epoch, Sequence: seq}, recs)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return &resp.Topics[0].Partitions[0]
}

// A producer that bumps its epoch locally (KIP-360, as franz-go does after
// a record timeout) restarts at sequence 0; a batch of the new epoch at
// another sequence is refused, so that the epoch's first batch, when it
// failed and is retried, is stored and not answered as an old duplicate
// (make torture DURATION=10m SEED=3 lost two acknowledged records so).
func TestNewEpochStartsAtSequenceZero(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "epochs", 1)
	cl := newClient(t, n.addr)
	ipr, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(testCtx(t), cl)
	if err != nil || ipr.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v, code %d", err, ipr.ErrorCode)
	}
	id, epoch := ipr.ProducerID, ipr.ProducerEpoch
	if r := produceIdempotent(t, cl, "epochs", id, epoch, 0); r.ErrorCode != 0 {
		t.Fatalf("epoch %d sequence 0: code %d", epoch, r.ErrorCode)
	}
	if r := produceIdempotent(t, cl, "epochs", id, epoch+1, 2); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("new epoch at sequence 2: code %d, base %d; want OUT_OF_ORDER_SEQUENCE_NUMBER", r.ErrorCode, r.BaseOffset)
	}
	first := produceIdempotent(t, cl, "epochs", id, epoch+1, 0)
	next := produceIdempotent(t, cl, "epochs", id, epoch+1, 2)
	if first.ErrorCode != 0 || next.ErrorCode != 0 || first.BaseOffset != 2 || next.BaseOffset != 4 {
		t.Fatalf("new epoch at 0 then 2: codes %d %d, base offsets %d %d; want 2 and 4",
			first.ErrorCode, next.ErrorCode, first.BaseOffset, next.BaseOffset)
	}
}

func TestAdminTopicsAndOffsets(t *testing.T) {
	n := startNode(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, n.addr))
	res, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"retention.ms": kmsg.StringPtr("3600000")}, "adm")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "adm"); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"unclean.leader.election.enable": kmsg.StringPtr("true")}, "bad"); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("create with an unsupported config: %v, want INVALID_CONFIG", err)
	}
	info, err := n.core.Topic(ctx, "", "adm")
	if err != nil || info.Config.RetentionMs != 3600000 || len(info.Partitions) != 2 {
		t.Fatalf("topic as created: %+v, %v", info.Config, err)
	}
	prod := newClient(t, n.addr, kgo.DefaultProduceTopic("adm"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	before := time.Now().UnixMilli()
	for i := 0; i < 5; i++ {
		r := &kgo.Record{Value: []byte(fmt.Sprint(i)), Partition: 1, Timestamp: time.UnixMilli(before + int64(i)*1000)}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	start, err := adm.ListStartOffsets(ctx, "adm")
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(ctx, "adm")
	if err != nil {
		t.Fatal(err)
	}
	at, err := adm.ListOffsetsAfterMilli(ctx, before+2500, "adm")
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := start.Lookup("adm", 1)
	e1, _ := end.Lookup("adm", 1)
	a1, _ := at.Lookup("adm", 1)
	if s1.Offset != 0 || e1.Offset != 5 || a1.Offset != 3 {
		t.Fatalf("partition 1: start %d, end %d, at time %d; want 0, 5, 3", s1.Offset, e1.Offset, a1.Offset)
	}
	del, err := adm.DeleteTopics(ctx, "adm")
	if err != nil || del["adm"].Err != nil {
		t.Fatalf("delete: %v %v", err, del["adm"].Err)
	}
	if _, err := n.core.Topic(ctx, "", "adm"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("after delete: %v", err)
	}
}

// Two franz-go members share a topic with each balancer; together they
// read every record once, and the group lists and describes them.
func TestGroupBalancers(t *testing.T) {
	balancers := map[string]kgo.GroupBalancer{
		"range": kgo.RangeBalancer(), "roundrobin": kgo.RoundRobinBalancer(),
		"sticky": kgo.StickyBalancer(), "cooperative-sticky": kgo.CooperativeStickyBalancer(),
	}
	for name, bal := range balancers {
		t.Run(name, func(t *testing.T) {
			n := startNode(t)
			n.createTopic(t, "gb", 4)
			ctx := testCtx(t)
			prod := newClient(t, n.addr, kgo.DefaultProduceTopic("gb"))
			const count = 40
			for i := 0; i < count; i++ {
				if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			seen := map[string]int{}
			consume := func(cl *kgo.Client, stop <-chan struct{}) {
				for {
					pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
					fs := cl.PollFetches(pctx)
					cancel()
					mu.Lock()
					fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
					mu.Unlock()
					select {
					case <-stop:
						return
					default:
					}
				}
			}
			opts := []kgo.Opt{kgo.ConsumerGroup("g-" + name), kgo.ConsumeTopics("gb"), kgo.Balancers(bal),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6 * time.Second)}
			a, b := newClient(t, n.addr, opts...), newClient(t, n.addr, opts...)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for _, cl := range []*kgo.Client{a, b} {
				wg.Add(1)
				go func() { defer wg.Done(); consume(cl, stop) }()
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				mu.Lock()
				done := len(seen) == count
				mu.Unlock()
				if done || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			adm := kadm.NewClient(newClient(t, n.addr))
			described, err := adm.DescribeGroups(ctx, "g-"+name)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != count {
				t.Fatalf("read %d distinct records of %d", len(seen), count)
			}
			for v, k := range seen {
				if k != 1 {
					t.Errorf("record %s read %d times", v, k)
				}
			}
			g := described["g-"+name]
			if g.Protocol != name || len(g.Members) == 0 {
				t.Fatalf("group: protocol %q, %d members, state %s", g.Protocol, len(g.Members), g.State)
			}
		})
	}
}

// OffsetForLeaderEpoch answers the high watermark for the current epoch
// and UNDEFINED for a newer one; ListGroups lists a group that joined.
func TestLeaderEpochAndListGroups(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "le", 1)
	ctx := testCtx(t)
	cl := newClient(t, n.addr, kgo.DefaultProduceTopic("le"))
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	ask := func(epoch int32) kadm.OffsetForLeaderEpoch {
		req := kadm.OffsetForLeaderEpochRequest{}
		req.Add("le", 0, epoch)
		res, err := adm.OffsetForLeaderEpoch(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res["le"][0]
	}
	if r := ask(0); r.Err != nil || r.EndOffset != 3 || r.LeaderEpoch != 0 {
		t.Fatalf("epoch 0: end %d, epoch %d, err %v; want 3, 0", r.EndOffset, r.LeaderEpoch, r.Err)
	}
	if r := ask(5); r.Err != nil || r.EndOffset != -1 || r.LeaderEpoch != -1 {
		t.Fatalf("epoch 5: end %d, epoch %d, err %v; want -1, -1", r.EndOffset, r.LeaderEpoch, r.Err)
	}
	cons := newClient(t, n.addr, kgo.ConsumerGroup("listed"), kgo.ConsumeTopics("le"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 3; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		got += len(fs.Records())
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed["listed"]; !ok || g.ProtocolType != "consumer" || g.State != "Stable" {
		t.Fatalf("ListGroups: %+v", listed)
	}
}
