package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch v9 names the member and its epoch: for a KIP-848 group with
// members they are checked as Kafka checks them (the member's epoch
// exactly: STALE_MEMBER_EPOCH; a member not in the group:
// UNKNOWN_MEMBER_ID), and a fetch naming no member with epoch -1 (an
// admin's) is answered.
func TestOffsetFetchV9ChecksMember(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "q", 1)
	ctx := testCtx(t)
	cl := newClient(t, n.addr)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.SubscribedTopicNames, hb.RebalanceTimeoutMillis = "g", "m1", []string{"q"}, 30000
	hresp, err := hb.RequestWith(ctx, cl)
	if err != nil || hresp.ErrorCode != 0 || hresp.MemberEpoch < 1 {
		t.Fatalf("join: %+v, %v", hresp, err)
	}
	for _, c := range []struct {
		member *string
		epoch  int32
		want   int16
	}{
		{kmsg.StringPtr("m1"), hresp.MemberEpoch, 0},
		{nil, -1, 0},
		{kmsg.StringPtr("m1"), hresp.MemberEpoch + 1, kerr.StaleMemberEpoch.Code},
		{kmsg.StringPtr("nobody"), hresp.MemberEpoch, kerr.UnknownMemberID.Code},
	} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "g", c.member, c.epoch
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "q", []int32{0}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != c.want {
			t.Fatalf("fetch as %v at epoch %d: %+v, %v; want code %d", c.member, c.epoch, resp, err, c.want)
		}
		if c.want == 0 && (len(resp.Groups[0].Topics) != 1 || resp.Groups[0].Topics[0].Partitions[0].Offset != -1) {
			t.Fatalf("fetch as %v: %+v, want q/0 at -1", c.member, resp.Groups[0].Topics)
		}
	}
}
