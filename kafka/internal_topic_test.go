package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// Metadata lists __consumer_offsets as an internal topic of one
// partition led by the coordinator, asked by name and among all topics,
// as clients that look for it expect; kadm leaves it out of ListTopics
// as it does Kafka's internal topics, and franz-go's regex consumer of
// a classic group skips it.
func TestMetadataListsConsumerOffsetsAsInternal(t *testing.T) {
	f := newFakeCore()
	if _, err := f.CreateTopic(testCtx(t), "", broker.DefaultConfig("rx")); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, f, Config{})
	cl := newClient(t, s.AdvertisedAddr())
	ctx := testCtx(t)

	named := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(offsetsTopic)
	named.Topics = append(named.Topics, rt)
	for name, req := range map[string]*kmsg.MetadataRequest{"by name": named, "all topics": kmsg.NewPtrMetadataRequest()} {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(resp.Topics, func(tp kmsg.MetadataResponseTopic) bool {
			return tp.Topic != nil && *tp.Topic == offsetsTopic
		})
		if i < 0 {
			t.Fatalf("%s: %s is not in %+v", name, offsetsTopic, resp.Topics)
		}
		if tp := resp.Topics[i]; tp.ErrorCode != 0 || !tp.IsInternal || len(tp.Partitions) != 1 || tp.Partitions[0].Leader != resp.ControllerID {
			t.Fatalf("%s: %s: code %d, internal %v, partitions %+v; want 0, true, one led by the controller %d", name, offsetsTopic, tp.ErrorCode, tp.IsInternal, tp.Partitions, resp.ControllerID)
		}
	}

	adm := kadm.NewClient(cl)
	listed, err := adm.ListTopics(ctx)
	if err != nil || !slices.Equal(listed.Names(), []string{"rx"}) {
		t.Fatalf("kadm ListTopics: %v %v, want [rx]", listed.Names(), err)
	}
	withInternal, err := adm.ListTopicsWithInternal(ctx)
	if err != nil || !withInternal.Has(offsetsTopic) || !withInternal[offsetsTopic].IsInternal {
		t.Fatalf("kadm ListTopicsWithInternal: %+v %v", withInternal, err)
	}

	cons := newClient(t, s.AdvertisedAddr(), kgo.ConsumeRegex(), kgo.ConsumeTopics(".*"))
	waitFor(t, "the regex consumer to resolve its topics", func() bool {
		cons.ForceMetadataRefresh()
		return len(cons.GetConsumeTopics()) > 0
	})
	if got := cons.GetConsumeTopics(); !slices.Equal(got, []string{"rx"}) {
		t.Fatalf("regex consumer of .* consumes %v, want [rx]", got)
	}
}

// offsetsDeniedCore refuses describing __consumer_offsets.
type offsetsDeniedCore struct{ *fakeCore }

func (c offsetsDeniedCore) Allowed(p Principal, op auth.Operation, r auth.Resource) bool {
	return r != auth.Topic(offsetsTopic)
}

func (c offsetsDeniedCore) TopicLayout(ctx context.Context, p Principal, name string) (TopicInfo, error) {
	if name == offsetsTopic {
		return TopicInfo{}, &auth.DeniedError{Operation: auth.OpDescribe, Resource: auth.Topic(name)}
	}
	return c.fakeCore.TopicLayout(ctx, p, name)
}

// A principal that may not describe __consumer_offsets does not see it
// among all topics and is refused it by name, as any topic.
func TestConsumerOffsetsTopicFollowsACLs(t *testing.T) {
	s := startServer(t, offsetsDeniedCore{newFakeCore()}, Config{})
	cl := newClient(t, s.AdvertisedAddr())
	withInternal, err := kadm.NewClient(cl).ListTopicsWithInternal(testCtx(t))
	if err != nil || withInternal.Has(offsetsTopic) {
		t.Fatalf("ListTopicsWithInternal: %v %v, want no %s", withInternal.Names(), err, offsetsTopic)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(offsetsTopic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("Metadata for %s when refused: code %d, want TOPIC_AUTHORIZATION_FAILED", offsetsTopic, code)
	}
}

// waitFor polls cond until it holds, failing the test after 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
