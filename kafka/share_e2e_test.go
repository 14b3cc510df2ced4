package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/auth"
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

func produceValues(t *testing.T, addr, topic string, from, to int, opts ...kgo.Opt) {
	t.Helper()
	p := newClient(t, addr, append(opts, kgo.DefaultProduceTopic(topic))...)
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
			t.Errorf("poll: %s/%d: %v", e.Topic, e.Partition, e.Err)
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

// Two members of one share group on one partition: a record A released
// goes to B with delivery count 2, a record A rejected never reaches
// anyone, and no record A accepted reaches B; then two members reading
// at once each get records the other never gets.
func TestShareTwoMembersReleaseReject(t *testing.T) {
	const count = 50
	n := shareSetup(t, "q", "g", count, "")
	ctx := testCtx(t)
	a := shareClient(t, n.addr, "q", "g", kgo.ShareMaxRecords(10))
	var got []*kgo.Record
	for len(got) < 3 && ctx.Err() == nil {
		got = append(got, pollShare(t, a)...)
	}
	released, rejected := got[0].Offset, got[1].Offset
	accepted := map[int64]bool{}
	got[0].Ack(kgo.AckRelease)
	got[1].Ack(kgo.AckReject)
	for _, r := range got[2:] {
		r.Ack(kgo.AckAccept)
		accepted[r.Offset] = true
	}
	if err := a.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	a.Close() // leaves: whatever A holds unpolled is released

	b := shareClient(t, n.addr, "q", "g")
	seen := map[int64]int32{}
	for len(seen) < count-1-len(accepted) && ctx.Err() == nil {
		for _, r := range pollShare(t, b) {
			if _, dup := seen[r.Offset]; dup {
				t.Errorf("offset %d delivered to B twice", r.Offset)
			}
			seen[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
	}
	if err := b.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	// A's client may have fetched it again before it left: 2 or more.
	if c := seen[released]; c < 2 {
		t.Errorf("released offset %d: delivery count %d at B, want at least 2", released, c)
	}
	if _, ok := seen[rejected]; ok {
		t.Errorf("rejected offset %d delivered again", rejected)
	}
	for o := range accepted {
		if _, ok := seen[o]; ok {
			t.Errorf("offset %d delivered after A accepted it", o)
		}
	}
	for o := int64(0); o < count; o++ {
		if _, ok := seen[o]; !ok && !accepted[o] && o != rejected {
			t.Errorf("offset %d never accepted", o)
		}
	}
	b.Close()
	concurrentMembers(t, n, count)
}

// concurrentMembers: two members read new records at once, accepting
// each; every record is delivered to exactly one of them.
func concurrentMembers(t *testing.T, n *shareNode, from int) {
	const more = 200
	produceValues(t, n.addr, "q", from, from+more)
	ctx := testCtx(t)
	type delivery struct {
		member int
		offset int64
	}
	ch := make(chan delivery, 2*more)
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	for m := 0; m < 2; m++ {
		cl := shareClient(t, n.addr, "q", "g", kgo.ShareMaxRecords(5))
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					cl.FlushAcks(ctx)
					return
				default:
				}
				for _, r := range pollShare(t, cl) {
					ch <- delivery{m, r.Offset}
					r.Ack(kgo.AckAccept)
				}
			}
		}()
	}
	by := map[int64]int{}
	for len(by) < more && ctx.Err() == nil {
		select {
		case d := <-ch:
			if prev, dup := by[d.offset]; dup {
				t.Errorf("offset %d delivered to member %d and member %d", d.offset, prev, d.member)
			}
			by[d.offset] = d.member
		case <-ctx.Done():
		}
	}
	close(stop)
	<-done
	<-done
	if len(by) != more {
		t.Fatalf("%d of %d new records delivered", len(by), more)
	}
}

// authNode is a node alone that requires SASL and authorizes with ACLs,
// with the superuser admin and the users eve and mallory (passwords
// NAME-pw), who may do nothing yet.
func authNode(t *testing.T) *shareNode {
	t.Helper()
	n := startShareNode(t, t.TempDir(), broker.Config{Auth: broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	}})
	for user, pw := range map[string]string{"admin": "admin-pw", "eve": "eve-pw", "mallory": "mallory-pw"} {
		if err := n.b.CreateUser(testCtx(t), "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
	return n
}
