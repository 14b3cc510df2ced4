package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/logd/logd/offsets"
)

// commitReq is an OffsetCommit (v8, from outside the group) of group with
// one partition of topic per offset, partition i at offsets[i].
func commitReq(group, topic string, offs ...int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for i, o := range offs {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(i), o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestKafkaOffsetCommitBadInput: bad input to OffsetCommit is answered
// with the code that says what is wrong, never UNKNOWN_SERVER_ERROR, and
// the request's valid partitions are stored.
func TestKafkaOffsetCommitBadInput(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "t", 2)
	ctx := testCtx(t)
	br := newClient(t, n.addr).SeedBrokers()[0] // straight to the node: no coordinator lookup for ""

	long := strings.Repeat("g", offsets.MaxGroupBytes+1)
	bigMeta := commitReq("g", "t", 0)
	bigMeta.Topics[0].Partitions[0].Metadata = kmsg.StringPtr(strings.Repeat("m", offsets.MaxMetadataBytes+1))
	for _, tc := range []struct {
		name string
		req  *kmsg.OffsetCommitRequest
		want []int16 // by partition
	}{
		{"empty group", commitReq("", "t", 0), []int16{kerr.InvalidGroupID.Code}},
		{"group too long", commitReq(long, "t", 0, 0), []int16{kerr.InvalidGroupID.Code, kerr.InvalidGroupID.Code}},
		{"negative offset", commitReq("g", "t", -5, 0), []int16{kerr.InvalidRequest.Code, 0}},
		{"offset -1", commitReq("g", "t", -1), []int16{kerr.InvalidRequest.Code}},
		{"metadata too large", bigMeta, []int16{kerr.OffsetMetadataTooLarge.Code}},
	} {
		resp, err := br.Request(ctx, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ps := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions
		for i, want := range tc.want {
			if ps[i].ErrorCode != want {
				t.Errorf("%s: partition %d answered %v, want %v", tc.name, i, kerr.ErrorForCode(ps[i].ErrorCode), kerr.ErrorForCode(want))
			}
		}
	}

	// The negative offset's neighbour was stored; the refused ones were not.
	cs, err := n.core.FetchOffsets(ctx, "", "g", []string{"t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Partition != 1 || cs[0].Offset != 0 {
		t.Fatalf("group g holds %+v, want t/1 at 0 only", cs)
	}
}

// TestKafkaOffsetFetchEmptyGroup: OffsetFetch of the group "" is
// INVALID_GROUP_ID, in the response and in each partition asked for; v8+
// answers it in the group's error code.
func TestKafkaOffsetFetchEmptyGroup(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "t", 1)
	for _, v := range []int16{7, 9} {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), v)
		br := newClient(t, n.addr, kgo.MaxVersions(vs)).SeedBrokers()[0]
		req := kmsg.NewPtrOffsetFetchRequest()
		if v >= 8 {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			rg.Topics = append(rg.Topics, rt)
			req.Groups = append(req.Groups, rg)
		} else {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := br.Request(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.OffsetFetchResponse)
		if v >= 8 {
			if len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.InvalidGroupID.Code {
				t.Errorf("v%d: answered %+v, want the group INVALID_GROUP_ID", v, r.Groups)
			}
			continue
		}
		if got := r.Topics[0].Partitions[0].ErrorCode; got != kerr.InvalidGroupID.Code {
			t.Errorf("v%d: partition answered %v, want INVALID_GROUP_ID", v, kerr.ErrorForCode(got))
		}
		if r.ErrorCode != kerr.InvalidGroupID.Code {
			t.Errorf("v%d: answered %v, want INVALID_GROUP_ID", v, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}
