package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// KIP-848's APIs are authorized as the classic group APIs are: a
// heartbeat needs read on the group, a describe needs describe on it.
// mallory (read on the topic only) is refused both; eve (read on the
// group, which implies describe) joins and describes.
func TestConsumerGroupACLs(t *testing.T) {
	n := authNode(t)
	ctx := testCtx(t)
	if _, err := n.b.CreateTopic(ctx, "User:admin", topicConfig("q", 1)); err != nil {
		t.Fatal(err)
	}
	allow := func(who string, rt auth.ResourceType, name string) auth.ACL {
		return auth.ACL{Principal: auth.User(who), Permission: auth.Allow, Operation: auth.OpRead, ResourceType: rt, PatternType: auth.PatternLiteral, Name: name}
	}
	if err := n.b.AddACLs(ctx, "User:admin", allow("eve", auth.ResourceTopic, "q"), allow("eve", auth.ResourceGroup, "g"),
		allow("mallory", auth.ResourceTopic, "q")); err != nil {
		t.Fatal(err)
	}
	type user struct {
		user, pw string
		want     int16
	}
	users := []user{{"mallory", "mallory-pw", kerr.GroupAuthorizationFailed.Code}, {"eve", "eve-pw", 0}}
	for _, c := range users {
		cl := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, c.user, c.pw)))
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.SubscribedTopicNames, hb.RebalanceTimeoutMillis = "g", "m-"+c.user, []string{"q"}, 30000
		hresp, err := hb.RequestWith(ctx, cl)
		if err != nil || hresp.ErrorCode != c.want {
			t.Fatalf("%s's heartbeat: %v, %v; want code %d", c.user, hresp, err, c.want)
		}
		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.Groups = []string{"g"}
		dresp, err := d.RequestWith(ctx, cl)
		if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].ErrorCode != c.want {
			t.Fatalf("%s's describe: %+v, %v; want code %d", c.user, dresp, err, c.want)
		}
		if c.want == 0 && (len(dresp.Groups[0].Members) != 1 || hresp.Assignment == nil || len(hresp.Assignment.Topics) != 1) {
			t.Fatalf("eve's join: assignment %+v, described %+v", hresp.Assignment, dresp.Groups[0])
		}
	}
	// The group, once eve joined: ListGroups lists it to eve only (type
	// "consumer", its own state), and a classic DescribeGroups describes
	// its member to eve and refuses mallory.
	for _, c := range users {
		cl := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, c.user, c.pw)))
		lg := kmsg.NewPtrListGroupsRequest()
		lresp, err := lg.RequestWith(ctx, cl)
		if err != nil || lresp.ErrorCode != 0 {
			t.Fatalf("%s's ListGroups: %+v, %v", c.user, lresp, err)
		}
		listed := len(lresp.Groups) == 1 && lresp.Groups[0].Group == "g" && lresp.Groups[0].GroupType == "consumer" &&
			lresp.Groups[0].ProtocolType == "consumer" && lresp.Groups[0].GroupState != ""
		if listed != (c.want == 0) || (c.want != 0 && len(lresp.Groups) != 0) {
			t.Fatalf("%s's ListGroups: %+v", c.user, lresp.Groups)
		}
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"g"}
		dresp, err := dg.RequestWith(ctx, cl)
		if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].ErrorCode != c.want {
			t.Fatalf("%s's DescribeGroups: %+v, %v; want code %d", c.user, dresp, err, c.want)
		}
		if g := dresp.Groups[0]; c.want == 0 && (g.ProtocolType != "consumer" || len(g.Members) != 1 || g.Members[0].MemberID != "m-eve") {
			t.Fatalf("eve's DescribeGroups of a consumer group: %+v", g)
		}
	}
}

// A subscription sees only the topics its member may describe: names it
// may not describe are refused (TOPIC_AUTHORIZATION_FAILED, as Kafka
// answers), and a regex resolves over the describable topics alone, so
// an ACL added later widens the assignment at the next heartbeat.
func TestConsumerGroupSubscriptionNeedsDescribe(t *testing.T) {
	n := authNode(t)
	ctx := testCtx(t)
	for _, c := range []struct {
		name  string
		parts int32
	}{{"a1", 2}, {"a2", 1}} {
		if _, err := n.b.CreateTopic(ctx, "User:admin", topicConfig(c.name, c.parts)); err != nil {
			t.Fatal(err)
		}
	}
	acl := func(op auth.Operation, rt auth.ResourceType, name string) auth.ACL {
		return auth.ACL{Principal: auth.User("eve"), Permission: auth.Allow, Operation: op, ResourceType: rt, PatternType: auth.PatternLiteral, Name: name}
	}
	if err := n.b.AddACLs(ctx, "User:admin", acl(auth.OpRead, auth.ResourceGroup, "g"), acl(auth.OpDescribe, auth.ResourceTopic, "a1")); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, "eve", "eve-pw")))
	ids := map[[16]byte]string{}
	for _, name := range []string{"a1", "a2"} {
		id, ok := n.b.TopicIDOf(name)
		if !ok {
			t.Fatalf("no id for topic %s", name)
		}
		ids[id] = name
	}
	assigned := func(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) map[string]int {
		out := map[string]int{}
		if a != nil {
			for _, x := range a.Topics {
				out[ids[x.TopicID]] += len(x.Partitions)
			}
		}
		return out
	}

	byNames := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	byNames.Group, byNames.MemberID, byNames.SubscribedTopicNames, byNames.RebalanceTimeoutMillis = "g", "m-names", []string{"a1", "a2"}, 30000
	resp, err := byNames.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("a subscription naming a topic eve may not describe: %+v, %v; want TOPIC_AUTHORIZATION_FAILED", resp, err)
	}

	byRegex := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	byRegex.Group, byRegex.MemberID, byRegex.SubscribedTopicRegex, byRegex.RebalanceTimeoutMillis = "g", "m-regex", kmsg.StringPtr("a.*"), 30000
	resp, err = byRegex.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("regex join: %+v, %v", resp, err)
	}
	if got := assigned(resp.Assignment); len(got) != 1 || got["a1"] != 2 {
		t.Fatalf("regex a.* for eve (describe on a1 only) assigned %v, want a1's 2 partitions only", got)
	}

	if err := n.b.AddACLs(ctx, "User:admin", acl(auth.OpDescribe, auth.ResourceTopic, "a2")); err != nil {
		t.Fatal(err)
	}
	beat := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	beat.Group, beat.MemberID, beat.MemberEpoch = "g", "m-regex", resp.MemberEpoch
	beat.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, x := range resp.Assignment.Topics {
		bt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		bt.TopicID, bt.Partitions = x.TopicID, x.Partitions
		beat.Topics = append(beat.Topics, bt)
	}
	resp, err = beat.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("heartbeat after the ACL: %+v, %v", resp, err)
	}
	if got := assigned(resp.Assignment); got["a1"] != 2 || got["a2"] != 1 {
		t.Fatalf("after describe on a2, regex a.* assigned %v, want a1's 2 and a2's 1 partitions", got)
	}
}
