package kafka

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// offsetsTopicClient is a node's Kafka client logged in as one user, with
// the raw requests the virtual offsets topic test sends: to the node
// itself, so that a refusal comes from the request, not from the
// client's metadata lookup before it.
type offsetsTopicClient struct {
	t    *testing.T
	cl   *kgo.Client
	node *kgo.Broker
}

func (c offsetsTopicClient) metadata() kmsg.MetadataResponseTopic {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(offsetsTopic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(c.t), c.cl)
	if err != nil || len(resp.Topics) != 1 {
		c.t.Fatalf("Metadata of %s: %+v, %v", offsetsTopic, resp, err)
	}
	return resp.Topics[0]
}

func (c offsetsTopicClient) listOffset(spec int64) kmsg.ListOffsetsResponseTopicPartition {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = offsetsTopic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, spec
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(c.t), c.node)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("ListOffsets of %s: %+v, %v", offsetsTopic, resp, err)
	}
	return resp.Topics[0].Partitions[0]
}

func (c offsetsTopicClient) fetch(offset int64) kmsg.FetchResponseTopicPartition {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = offsetsTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(c.t), c.node)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("Fetch of %s: %+v, %v", offsetsTopic, resp, err)
	}
	return resp.Topics[0].Partitions[0]
}

func (c offsetsTopicClient) produce() int16 {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = offsetsTopic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, testBatch(c.t, "v")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(c.t), c.node)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("Produce to %s: %+v, %v", offsetsTopic, resp, err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// assigned joins group as a KIP-848 member subscribing by regex and
// returns its assignment: partitions by topic id.
func (c offsetsTopicClient) assigned(group, regex string) map[[16]byte][]int32 {
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = group, "m-"+group, 30000
	hb.SubscribedTopicRegex = kmsg.StringPtr(regex)
	resp, err := hb.RequestWith(testCtx(c.t), c.cl)
	if err != nil || resp.ErrorCode != 0 || resp.Assignment == nil {
		c.t.Fatalf("heartbeat of %s subscribing to %q: %+v, %v", group, regex, resp, err)
	}
	out := map[[16]byte][]int32{}
	for _, at := range resp.Assignment.Topics {
		out[at.TopicID] = at.Partitions
	}
	return out
}

// __consumer_offsets is a virtual topic of one empty, read-only partition
// (offsets_topic.go): eve, who may read it, finds it in Metadata with a
// leader, lists offset 0, fetches it empty, is refused a write with
// Kafka's INVALID_TOPIC_EXCEPTION, commits offset 0 to it, and as a
// KIP-848 member subscribing by a regex that names it is assigned its
// partition. mallory, who may not describe it, is refused each request
// by the core's authorization as for any topic, and her regex treats it
// as it treats "secret", another topic she may not describe.
func TestConsumerOffsetsTopicIsVirtual(t *testing.T) {
	n := authNode(t)
	ctx := testCtx(t)
	for _, name := range []string{"orders", "secret"} {
		if _, err := n.b.CreateTopic(ctx, "User:admin", topicConfig(name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	allow := func(who string, op auth.Operation, rt auth.ResourceType, name string) auth.ACL {
		return auth.ACL{Principal: auth.User(who), Permission: auth.Allow, Operation: op, ResourceType: rt, PatternType: auth.PatternLiteral, Name: name}
	}
	if err := n.b.AddACLs(ctx, "User:admin",
		allow("eve", auth.OpRead, auth.ResourceTopic, "orders"), allow("eve", auth.OpRead, auth.ResourceTopic, offsetsTopic),
		allow("eve", auth.OpWrite, auth.ResourceTopic, offsetsTopic),
		allow("eve", auth.OpRead, auth.ResourceGroup, "g"), allow("eve", auth.OpRead, auth.ResourceGroup, "c"),
		allow("mallory", auth.OpRead, auth.ResourceTopic, "orders"), allow("mallory", auth.OpRead, auth.ResourceGroup, "m"),
	); err != nil {
		t.Fatal(err)
	}
	login := func(user, pw string) offsetsTopicClient {
		cl := newClient(t, n.addr, kgo.SASL(scramAuth(auth.ScramSHA256, user, pw)))
		return offsetsTopicClient{t, cl, cl.Broker(int(n.b.LocalNode().KafkaID))}
	}
	eve, mallory := login("eve", "eve-pw"), login("mallory", "mallory-pw")
	vid := broker.OffsetsTopicID()

	md := eve.metadata()
	if md.ErrorCode != 0 || !md.IsInternal || md.TopicID != vid || len(md.Partitions) != 1 {
		t.Fatalf("eve's Metadata of %s: %+v, want internal, its id and one partition", offsetsTopic, md)
	}
	if p := md.Partitions[0]; p.ErrorCode != 0 || p.Partition != 0 || p.Leader != n.b.LocalNode().KafkaID || !slices.Equal(p.Replicas, []int32{p.Leader}) {
		t.Fatalf("eve's Metadata of %s/0: %+v, want led by this node (%d)", offsetsTopic, p, n.b.LocalNode().KafkaID)
	}
	for _, spec := range []int64{Earliest, Latest} {
		if p := eve.listOffset(spec); p.ErrorCode != 0 || p.Offset != 0 {
			t.Fatalf("eve's ListOffsets %d of %s: %+v, want offset 0", spec, offsetsTopic, p)
		}
	}
	if p := eve.fetch(0); p.ErrorCode != 0 || p.HighWatermark != 0 || p.LogStartOffset != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("eve's Fetch of %s at 0: %+v, want empty with high watermark 0", offsetsTopic, p)
	}
	if p := eve.fetch(3); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("eve's Fetch of %s at 3: code %d, want OFFSET_OUT_OF_RANGE", offsetsTopic, p.ErrorCode)
	}
	if code := eve.produce(); code != kerr.InvalidTopicException.Code {
		t.Fatalf("eve's Produce to %s: code %d, want INVALID_TOPIC_EXCEPTION", offsetsTopic, code)
	}
	adm := kadm.NewClient(eve.cl)
	commit := kadm.Offsets{}
	commit.AddOffset(offsetsTopic, 0, 0, -1)
	if res, err := adm.CommitOffsets(ctx, "c", commit); err != nil || res.Error() != nil {
		t.Fatalf("eve's OffsetCommit of %s/0 at 0: %v %v", offsetsTopic, err, res.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, "c")
	if o, ok := fetched.Lookup(offsetsTopic, 0); err != nil || !ok || o.At != 0 {
		t.Fatalf("eve's OffsetFetch of %s/0: %+v %v, want 0", offsetsTopic, o, err)
	}
	ordersID, _ := n.b.TopicIDOf("orders")
	got := eve.assigned("g", offsetsTopic+"|orders")
	if len(got) != 2 || !slices.Equal(got[vid], []int32{0}) || !slices.Equal(got[ordersID], []int32{0}) {
		t.Fatalf("eve's regex member is assigned %v, want %s/0 (%x) and orders/0", got, offsetsTopic, vid)
	}

	if md := mallory.metadata(); md.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("mallory's Metadata of %s: code %d, want TOPIC_AUTHORIZATION_FAILED", offsetsTopic, md.ErrorCode)
	}
	if p := mallory.listOffset(Latest); p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("mallory's ListOffsets of %s: code %d, want TOPIC_AUTHORIZATION_FAILED", offsetsTopic, p.ErrorCode)
	}
	if p := mallory.fetch(0); p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("mallory's Fetch of %s: code %d, want TOPIC_AUTHORIZATION_FAILED", offsetsTopic, p.ErrorCode)
	}
	if code := mallory.produce(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("mallory's Produce to %s: code %d, want TOPIC_AUTHORIZATION_FAILED", offsetsTopic, code)
	}
	secretID, _ := n.b.TopicIDOf("secret")
	got = mallory.assigned("m", offsetsTopic+"|secret|orders")
	if _, ok := got[ordersID]; !ok {
		t.Fatalf("mallory's regex member is assigned %v, want orders among them", got)
	}
	if _, virtual := got[vid]; virtual != (got[secretID] != nil) {
		t.Fatalf("mallory's regex member is assigned %v: %s and secret, neither of which she may describe, differ", got, offsetsTopic)
	}
}
