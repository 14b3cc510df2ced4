package kafka

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions grows a topic through the core's AddPartitions (kadm),
// and refuses counts that do not grow it, assignments and repeated topics.
func TestCreatePartitionsWithKadm(t *testing.T) {
	core := newFakeCore()
	defer core.coord.Close()
	if _, err := core.CreateTopic(context.Background(), "", topicConfig("grow", 2)); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, startServer(t, core, Config{}).Addr().String()))
	rs, err := adm.CreatePartitions(ctx, 3, "grow")
	if err != nil || rs["grow"].Err != nil {
		t.Fatalf("add 3: %v %+v", err, rs)
	}
	md, err := adm.Metadata(ctx, "grow")
	if err != nil || len(md.Topics["grow"].Partitions) != 5 {
		t.Fatalf("after adding 3 to 2: %v %+v", err, md.Topics["grow"])
	}
	if rs, _ := adm.UpdatePartitions(ctx, 4, "grow"); !errors.Is(rs["grow"].Err, kerr.InvalidPartitions) {
		t.Fatalf("shrink to 4: %+v", rs)
	}
	if rs, _ := adm.ValidateCreatePartitions(ctx, 1, "grow"); rs["grow"].Err != nil || core.topics["grow"].cfg.Partitions != 5 {
		t.Fatalf("validate-only: %+v, %d partitions", rs, core.topics["grow"].cfg.Partitions)
	}
	if rs, _ := adm.CreatePartitions(ctx, 1, "nope"); !errors.Is(rs["nope"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %+v", rs)
	}

	cl := newClient(t, startServer(t, core, Config{}).Addr().String())
	req := kmsg.NewPtrCreatePartitionsRequest()
	for range 2 {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "grow", 9
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a topic named twice: %v %+v", err, resp)
	}
	req.Topics = req.Topics[:1]
	req.Topics[0].Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("an assignment: %v %+v", err, resp)
	}

}
