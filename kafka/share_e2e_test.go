package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/broker"
)

// shareNode is a real single node on dir, restartable.
type shareNode struct {
	t    *testing.T
	dir  string
	b    *broker.Broker
	s    *Server
	addr string
}

func startShareNode(t *testing.T, dir string, cfg broker.Config) *shareNode {
	t.Helper()
	cfg.DataDir, cfg.Logger = dir, quietLogger()
	b, err := broker.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", Config{Core: b, Logger: quietLogger(), Gate: b.Gate()})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	b.Ready(broker.Node{KafkaAddr: s.AdvertisedAddr()})
	n := &shareNode{t: t, dir: dir, b: b, s: s, addr: s.AdvertisedAddr()}
	t.Cleanup(n.stop)
	return n
}

func (n *shareNode) stop() {
	if n.b == nil {
		return
	}
	n.b.Shutdown()
	n.s.Close()
	if err := n.b.Close(); err != nil {
		n.t.Errorf("closing the broker: %v", err)
	}
	n.b = nil
}

// shareSetup is a node with topic (one partition) holding records
// "0".."count-1", and group configured to start at the earliest offset
// with the given delivery limit.
func shareSetup(t *testing.T, topic, group string, count int, limit string) *shareNode {
	t.Helper()
	n := startShareNode(t, t.TempDir(), broker.Config{})
	ctx := testCtx(t)
	if _, err := n.b.CreateTopic(ctx, "", topicConfig(topic, 1)); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{"share.auto.offset.reset": "earliest"}
	if limit != "" {
		cfg["share.delivery.attempt.limit"] = limit
	}
	if err := n.b.SetShareGroupConfig(ctx, "", group, cfg); err != nil {
		t.Fatal(err)
	}
	produceValues(t, n.addr, topic, 0, count)
	return n
}

func produceValues(t *testing.T, addr, topic string, from, to int) {
	t.Helper()
	p := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, kgo.StringRecord(fmt.Sprint(i)))
	}
	if err := p.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.Close()
}

func shareClient(t *testing.T, addr, topic, group string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)
	return newClient(t, addr, opts...)
}

// pollShare polls cl once (up to a second) and returns its records.
func pollShare(t *testing.T, cl *kgo.Client) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), time.Second)
	defer cancel()
	fs := cl.PollFetches(ctx)
	for _, e := range fs.Errors() {
		if e.Err != context.DeadlineExceeded {
			t.Fatalf("poll: %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
	}
	return fs.Records()
}

// TestShareSmoke: one member reads every record once and accepts it.
func TestShareSmoke(t *testing.T) {
	n := shareSetup(t, "q", "g", 20, "")
	cl := shareClient(t, n.addr, "q", "g")
	seen := map[int64]int{}
	ctx := testCtx(t)
	for len(seen) < 20 && ctx.Err() == nil {
		for _, r := range pollShare(t, cl) {
			seen[r.Offset]++
			if r.DeliveryCount() != 1 {
				t.Errorf("offset %d: delivery count %d", r.Offset, r.DeliveryCount())
			}
			r.Ack(kgo.AckAccept)
		}
	}
	if len(seen) != 20 {
		t.Fatalf("saw %d of 20 offsets", len(seen))
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := n.b.DescribeShareGroup(ctx, "", "g")
	if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Start != 20 {
		t.Fatalf("describe: %+v %v", d, err)
	}
}
