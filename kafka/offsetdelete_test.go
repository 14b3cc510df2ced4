package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logd/logd/auth"
)

// OffsetDelete (kadm's DeleteOffsets) deletes a group's committed offsets
// of the partitions named and no others; a topic an active member of the
// group subscribes to is GROUP_SUBSCRIBED_TO_TOPIC and keeps its offsets;
// a principal that may not delete the group is refused and deletes
// nothing; an unknown group is GROUP_ID_NOT_FOUND.
func TestOffsetDelete(t *testing.T) {
	b, addr, admin, eve := secureNode(t)
	ctx := testCtx(t)
	for _, name := range []string{"od-read", "od-idle"} {
		if _, err := b.CreateTopic(ctx, "User:admin", topicConfig(name, 2)); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(admin)
	commit := kadm.Offsets{}
	for _, topic := range []string{"od-read", "od-idle"} {
		for p := int32(0); p < 2; p++ {
			commit.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
		}
	}
	if cr, err := adm.CommitOffsets(ctx, "g", commit); err != nil || cr.Error() != nil {
		t.Fatal(err, cr.Error())
	}

	if _, err := kadm.NewClient(eve).DeleteOffsets(ctx, "g", kadm.TopicsSet{"od-idle": {0: {}}}); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("eve deletes offsets: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	if _, err := adm.DeleteOffsets(ctx, "nobody", kadm.TopicsSet{"od-idle": {0: {}}}); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("an unknown group: %v, want GROUP_ID_NOT_FOUND", err)
	}

	consumer := newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "admin", "admin-pw")),
		kgo.ConsumerGroup("g"), kgo.ConsumeTopics("od-read"))
	awaitStable(t, consumer, adm, "g")
	if o, err := adm.FetchOffsets(ctx, "g"); err != nil || len(o) != 2 {
		t.Fatalf("before: %+v %v", o, err)
	}

	res, err := adm.DeleteOffsets(ctx, "g", kadm.TopicsSet{"od-read": {0: {}}, "od-idle": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := res.Lookup("od-read", 0); !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Fatalf("the subscribed topic: %v, want GROUP_SUBSCRIBED_TO_TOPIC", e)
	}
	if e, ok := res.Lookup("od-idle", 1); !ok || e != nil {
		t.Fatalf("the idle topic: %v %v", e, ok)
	}
	left, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []struct {
		topic string
		part  int32
		kept  bool
	}{{"od-read", 0, true}, {"od-read", 1, true}, {"od-idle", 0, true}, {"od-idle", 1, false}} {
		o, ok := left.Lookup(tp.topic, tp.part)
		if kept := ok && o.At == 0; kept != tp.kept {
			t.Errorf("%s/%d: %+v %v, kept %v", tp.topic, tp.part, o, ok, tp.kept)
		}
	}
}

// awaitStable polls cl (a group consumer) until the group is Stable.
func awaitStable(t *testing.T, cl *kgo.Client, adm *kadm.Client, group string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		cl.PollFetches(pctx)
		cancel()
		d, err := adm.DescribeGroups(testCtx(t), group)
		if err == nil && d[group].State == "Stable" {
			return
		}
	}
	t.Fatalf("group %q never became Stable", group)
}
