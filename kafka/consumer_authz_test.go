package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// KIP-848's APIs are authorized as the classic group APIs are: a
// heartbeat needs read on the group, a describe needs describe on it.
// mallory (read on the topic only) is refused both; eve (read on the
// group, which implies describe) joins and describes.
func TestConsumerGroupACLs(t *testing.T) {
	n := startShareNode(t, t.TempDir(), broker.Config{Auth: broker.AuthConfig{
		Mode: auth.AuthRequired, Authz: auth.AuthzOn, SuperUsers: []auth.Principal{auth.User("admin")},
	}})
	ctx := testCtx(t)
	for user, pw := range map[string]string{"admin": "admin-pw", "eve": "eve-pw", "mallory": "mallory-pw"} {
		if err := n.b.CreateUser(ctx, "User:admin", user, pw, false); err != nil {
			t.Fatal(err)
		}
	}
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
	for _, c := range []struct {
		user, pw string
		want     int16
	}{{"mallory", "mallory-pw", kerr.GroupAuthorizationFailed.Code}, {"eve", "eve-pw", 0}} {
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
}
