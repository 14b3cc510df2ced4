package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/offsets"
)

// aclCore is the fake core with the core's authorization in front, as
// broker has it: User:mallory may only describe and write the topic
// "public" and describe the group "open"; everyone else may do anything.
// Refusals are what the broker returns: broker.ErrDenied wrapping a
// *auth.DeniedError.
type aclCore struct{ *fakeCore }

func (aclCore) check(p Principal, op auth.Operation, r auth.Resource) error {
	if p != "User:mallory" || (r == auth.Topic("public") && (op == auth.OpDescribe || op == auth.OpWrite)) ||
		(r == auth.Group("open") && op == auth.OpDescribe) {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrDenied, &auth.DeniedError{Principal: auth.User("mallory"), Operation: op, Resource: r})
}

func (c aclCore) TopicLayouts(ctx context.Context, p Principal) ([]TopicInfo, error) {
	all, err := c.fakeCore.TopicLayouts(ctx, p)
	return slices.DeleteFunc(all, func(t TopicInfo) bool {
		return c.check(p, auth.OpDescribe, auth.Topic(t.Config.Name)) != nil
	}), err
}

func (c aclCore) Topic(ctx context.Context, p Principal, name string) (TopicInfo, error) {
	if err := c.check(p, auth.OpDescribe, auth.Topic(name)); err != nil {
		return TopicInfo{}, err
	}
	return c.fakeCore.Topic(ctx, p, name)
}

func (c aclCore) TopicLayout(ctx context.Context, p Principal, name string) (TopicInfo, error) {
	if err := c.check(p, auth.OpDescribe, auth.Topic(name)); err != nil {
		return TopicInfo{}, err
	}
	return c.fakeCore.TopicLayout(ctx, p, name)
}

func (c aclCore) CreateTopic(ctx context.Context, p Principal, cfg broker.TopicConfig) (broker.TopicConfig, error) {
	if err := c.check(p, auth.OpCreate, auth.Cluster()); err != nil {
		return cfg, err
	}
	return c.fakeCore.CreateTopic(ctx, p, cfg)
}

func (c aclCore) DeleteTopic(ctx context.Context, p Principal, name string) error {
	if err := c.check(p, auth.OpDelete, auth.Topic(name)); err != nil {
		return err
	}
	return c.fakeCore.DeleteTopic(ctx, p, name)
}

func (c aclCore) StartProduce(ctx context.Context, r ProduceRequest) (ProduceFuture, error) {
	if err := c.check(r.Principal, auth.OpWrite, auth.Topic(r.Topic)); err != nil {
		return nil, err
	}
	return c.fakeCore.StartProduce(ctx, r)
}

func (c aclCore) CommitOffsets(ctx context.Context, p Principal, group, member string, gen int32, cs []offsets.Committed) error {
	if err := c.check(p, auth.OpRead, auth.Group(group)); err != nil {
		return err
	}
	return c.fakeCore.CommitOffsets(ctx, p, group, member, gen, cs)
}

func (c aclCore) GroupMember(ctx context.Context, p Principal, group string) (GroupMember, error) {
	if err := c.check(p, auth.OpRead, auth.Group(group)); err != nil {
		return nil, err
	}
	return c.fakeCore.GroupMember(ctx, p, group)
}

func (c aclCore) DescribeGroup(ctx context.Context, p Principal, group string) (groups.GroupDescription, error) {
	if err := c.check(p, auth.OpDescribe, auth.Group(group)); err != nil {
		return groups.GroupDescription{}, err
	}
	return c.fakeCore.DescribeGroup(ctx, p, group)
}

func (c aclCore) ListMemberGroups(ctx context.Context, p Principal) ([]GroupListing, error) {
	all, err := c.fakeCore.ListMemberGroups(ctx, p)
	return slices.DeleteFunc(all, func(l GroupListing) bool {
		return c.check(p, auth.OpDescribe, auth.Group(l.Group)) != nil
	}), err
}

func (c aclCore) Allowed(p Principal, op auth.Operation, r auth.Resource) bool {
	return c.check(p, op, r) == nil
}

// The principal a SASL login names reaches the core, and the core's
// refusals come back as the Kafka codes of the refused resource: Metadata
// lists only what the principal may describe.
func TestKafkaRefusedPrincipal(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired, core: aclCore{newFakeCore()}})
	addr := ss.s.Addr().String()
	ctx := testCtx(t)
	alice := kadm.NewClient(newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "alice", "s3cret"))))
	for _, name := range []string{"public", "secret"} {
		if _, err := alice.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	sasl := kgo.SASL(scramAuth(auth.ScramSHA512, "mallory", "m4llory"))
	mcl := newClient(t, addr, sasl, kgo.RecordRetries(1))
	mallory := kadm.NewClient(mcl)

	topics, err := mallory.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := topics.Names(); !slices.Equal(got, []string{"public"}) {
		t.Errorf("mallory's Metadata lists %q, want [public]", got)
	}
	named, err := mallory.ListTopics(ctx, "secret")
	if err == nil {
		err = named["secret"].Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("Metadata for secret: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := mcl.ProduceSync(ctx, &kgo.Record{Topic: "public", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Errorf("produce to public: %v", err)
	}
	resp, err := mallory.CreateTopic(ctx, 1, 1, nil, "mine")
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("create topic: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	dresp, err := mallory.DeleteTopics(ctx, "public")
	if err == nil {
		err = dresp["public"].Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("delete topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "public", Partition: 0, At: 1})
	cresp, err := mallory.CommitOffsets(ctx, "g", os)
	if err == nil {
		err = cresp.Error()
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("commit offsets: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	// The coordinator takes no principal: the listener asks the core.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	if jresp, err := join.RequestWith(ctx, mcl); err != nil || jresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("join group: %v, code %v; want GROUP_AUTHORIZATION_FAILED", err, jresp)
	}
	described, err := mallory.DescribeGroups(ctx, "g")
	if err == nil {
		err = described["g"].Err
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("describe group: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	prod := newClient(t, addr, sasl, kgo.DefaultProduceTopic("secret"), kgo.RecordRetries(1))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce to secret: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
