package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// share.delivery.attempt.limit: a record released at every delivery is
// delivered twice with a limit of 2, then archived: the share partition's
// start passes it and a later record arrives without it.
func TestShareDeliveryLimit(t *testing.T) {
	n := shareSetup(t, "q", "g", 2, "2")
	ctx := testCtx(t)
	cl := shareClient(t, n.addr, "q", "g")
	deliveries := 0
	accepted := false
	for (deliveries < 2 || !accepted) && ctx.Err() == nil {
		for _, r := range pollShare(t, cl) {
			switch r.Offset {
			case 0:
				deliveries++
				if int(r.DeliveryCount()) != deliveries || deliveries > 2 {
					t.Fatalf("delivery %d of offset 0 has count %d (limit 2)", deliveries, r.DeliveryCount())
				}
				r.Ack(kgo.AckRelease)
			default:
				r.Ack(kgo.AckAccept)
				accepted = true
			}
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := n.b.DescribeShareGroup(ctx, "", "g")
	if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Start != 2 {
		t.Fatalf("after the limit: %+v, %v (want start 2)", d.Partitions, err)
	}
	produceValues(t, n.addr, "q", 2, 3)
	for got := false; !got && ctx.Err() == nil; {
		for _, r := range pollShare(t, cl) {
			if r.Offset == 0 {
				t.Fatalf("offset 0 delivered past its limit (count %d)", r.DeliveryCount())
			}
			got = got || r.Offset == 2
			r.Ack(kgo.AckAccept)
		}
	}
}

// A share partition's state survives the node's restart: records
// accepted before it are never delivered after it, records released
// before it come back with their delivery counts.
func TestShareStateSurvivesRestart(t *testing.T) {
	const count = 10
	n := shareSetup(t, "q", "g", count, "")
	ctx := testCtx(t)
	cl := shareClient(t, n.addr, "q", "g")
	seen := map[int64]bool{}
	for len(seen) < count && ctx.Err() == nil {
		for _, r := range pollShare(t, cl) {
			seen[r.Offset] = true
			if r.Offset < count/2 {
				r.Ack(kgo.AckAccept)
			} else {
				r.Ack(kgo.AckRelease)
			}
		}
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	n.stop()

	n = startShareNode(t, n.dir, broker.Config{})
	cl = shareClient(t, n.addr, "q", "g")
	again := map[int64]int32{}
	for len(again) < count/2 && ctx.Err() == nil {
		for _, r := range pollShare(t, cl) {
			if r.Offset < count/2 {
				t.Fatalf("offset %d delivered after it was accepted and the node restarted", r.Offset)
			}
			again[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
	}
	for o, c := range again {
		if c < 2 {
			t.Errorf("offset %d: delivery count %d after a release and a restart, want at least 2", o, c)
		}
	}
}

// The share APIs need read on the group: a principal with read on the
// topic only is refused GROUP_AUTHORIZATION_FAILED by the heartbeat and
// the fetch; one with read on both reads.
func TestShareGroupACLs(t *testing.T) {
	n := authNode(t)
	ctx := testCtx(t)
	if _, err := n.b.CreateTopic(ctx, "User:admin", topicConfig("q", 1)); err != nil {
		t.Fatal(err)
	}
	if err := n.b.SetShareGroupConfig(ctx, "User:admin", "g", map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		t.Fatal(err)
	}
	allow := func(who string, rt auth.ResourceType, name string) auth.ACL {
		return auth.ACL{Principal: auth.User(who), Permission: auth.Allow, Operation: auth.OpRead, ResourceType: rt, PatternType: auth.PatternLiteral, Name: name}
	}
	if err := n.b.AddACLs(ctx, "User:admin", allow("eve", auth.ResourceTopic, "q"), allow("eve", auth.ResourceGroup, "g"),
		allow("mallory", auth.ResourceTopic, "q")); err != nil {
		t.Fatal(err)
	}
	produceValues(t, n.addr, "q", 0, 5, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")))

	mallory := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, "mallory", "mallory-pw")))
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "g", "m1", []string{"q"}
	hresp, err := hb.RequestWith(ctx, mallory)
	if err != nil || hresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("mallory's heartbeat: code %v, %v; want GROUP_AUTHORIZATION_FAILED", hresp, err)
	}
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("m1")
	fresp, err := sf.RequestWith(ctx, mallory)
	if err != nil || fresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("mallory's share fetch: %v, %v; want GROUP_AUTHORIZATION_FAILED", fresp, err)
	}

	eve := shareClient(t, n.addr, "q", "g", kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw")))
	seen := map[int64]bool{}
	for len(seen) < 5 && ctx.Err() == nil {
		for _, r := range pollShare(t, eve) {
			seen[r.Offset] = true
		}
	}
	if len(seen) != 5 {
		t.Fatalf("eve read %d of 5 records", len(seen))
	}
}

// ShareFetch in record-limit mode (KIP-1206, franz-go's
// ShareMaxRecordsStrict): a member is never handed more records than its
// limit, although they sit in one batch. The whole batch is sent; the
// acquired ranges name the records that are the member's, and the share
// partition holds no more than two fetches' worth: franz-go may send its
// next ShareFetch as a poll returns, before the records polled are
// acknowledged (the acknowledgements go with the fetch after it), so the
// records of the poll and of one fetch ahead can be acquired at once. An
// acquire that ran to the batch's end would hold all 30.
func TestShareRecordLimit(t *testing.T) {
	const count, limit = 30, 4
	n := shareSetup(t, "q", "g", count, "")
	ctx := testCtx(t)
	cl := shareClient(t, n.addr, "q", "g", kgo.ShareMaxRecords(limit), kgo.ShareMaxRecordsStrict())
	seen := map[int64]bool{}
	for len(seen) < count && ctx.Err() == nil {
		rs := pollShare(t, cl)
		if len(rs) > limit {
			t.Fatalf("a poll returned %d records, more than the limit %d", len(rs), limit)
		}
		if len(rs) == 0 {
			continue
		}
		d, err := n.b.DescribeShareGroup(ctx, "", "g")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Partitions {
			if p.Acquired > 2*limit {
				t.Fatalf("%d records acquired by the one member, more than two fetches of its limit %d", p.Acquired, limit)
			}
		}
		for _, r := range rs {
			if seen[r.Offset] {
				t.Fatalf("offset %d delivered twice", r.Offset)
			}
			seen[r.Offset] = true
			r.Ack(kgo.AckAccept)
		}
	}
	if len(seen) != count {
		t.Fatalf("%d of %d records delivered", len(seen), count)
	}
}

// A share session ends with the connection that opened it, as in Kafka:
// the records its member held go back to the group at once, not when
// their locks expire (30 s here). A session the member opened again on
// another connection outlives the first connection.
func TestShareSessionEndsWithItsConnection(t *testing.T) {
	n := shareSetup(t, "q", "g", 6, "")
	ctx := testCtx(t)
	id, ok := n.b.TopicIDOf("q")
	if !ok {
		t.Fatal("no topic id for q")
	}
	acquired := func() int {
		d, err := n.b.DescribeShareGroup(ctx, "", "g")
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, p := range d.Partitions {
			sum += p.Acquired
		}
		return sum
	}
	// fetch joins member on c (once) and acquires up to max records with
	// a session opened on c.
	corr := int32(0)
	fetch := func(c *rawConn, member string, max int32) int {
		corr++
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.Version = 1
		hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "g", member, []string{"q"}
		hresp := c.call(hb, corr).(*kmsg.ShareGroupHeartbeatResponse)
		if hresp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v", member, kerr.ErrorForCode(hresp.ErrorCode))
		}
		corr++
		sf := kmsg.NewPtrShareFetchRequest()
		sf.Version = 1
		sf.GroupID, sf.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr(member)
		sf.MaxWaitMillis, sf.MaxRecords, sf.BatchSize = 1000, max, max
		tp := kmsg.NewShareFetchRequestTopic()
		tp.TopicID = id
		p := kmsg.NewShareFetchRequestTopicPartition()
		tp.Partitions = append(tp.Partitions, p)
		sf.Topics = append(sf.Topics, tp)
		fresp := c.call(sf, corr).(*kmsg.ShareFetchResponse)
		if fresp.ErrorCode != 0 {
			t.Fatalf("share fetch of %s: %v", member, kerr.ErrorForCode(fresp.ErrorCode))
		}
		got := 0
		for _, tp := range fresp.Topics {
			for _, p := range tp.Partitions {
				for _, a := range p.AcquiredRecords {
					got += int(a.LastOffset - a.FirstOffset + 1)
				}
			}
		}
		return got
	}

	a := dialRaw(t, n.s)
	if got := fetch(a, "a", 3); got != 3 {
		t.Fatalf("a acquired %d records, want 3", got)
	}
	b1, b2 := dialRaw(t, n.s), dialRaw(t, n.s)
	if got := fetch(b1, "b", 3); got != 3 {
		t.Fatalf("b acquired %d records on its first connection, want 3", got)
	}
	// b opens its session again on a second connection (its first is
	// still up): what b holds is b's either way.
	fetch(b2, "b", 0)
	if got := acquired(); got != 6 {
		t.Fatalf("%d records acquired, want 6", got)
	}
	a.nc.Close()
	b1.nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for acquired() != 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := acquired(); got != 3 {
		t.Fatalf("%d records acquired 10 s after a's connection closed, want b's 3 (a's released, b's kept)", got)
	}
}
