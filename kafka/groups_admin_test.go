package kafka

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DeleteGroups refuses a group with members (NON_EMPTY_GROUP), deletes an
// empty one with its committed offsets, and ListGroups also lists groups
// that only have committed offsets; with kadm on a real node.
func TestDeleteGroupsAndOffsetOnlyGroups(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "dg", 1)
	ctx := testCtx(t)
	cl := newClient(t, n.addr, kgo.DefaultProduceTopic("dg"))
	for range 3 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)

	cons, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.ConsumerGroup("members"), kgo.ConsumeTopics("dg"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 3; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		got += len(fs.Records())
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	// A group outside any member's commit: offsets only.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "dg", Partition: 0, At: 2, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "offsets-only", os); err != nil {
		t.Fatal(err)
	}

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed["offsets-only"]; !ok || g.State != "Empty" || g.ProtocolType != "consumer" {
		t.Fatalf("a group with committed offsets only is not listed as Empty: %+v", listed)
	}
	if g, ok := listed["members"]; !ok || g.State != "Stable" {
		t.Fatalf("ListGroups: %+v", listed)
	}
	if empty, err := adm.ListGroups(ctx, "Empty"); err != nil || len(empty) != 1 {
		t.Fatalf("ListGroups(Empty): %+v %v", empty, err)
	}

	res, err := adm.DeleteGroups(ctx, "members")
	if err != nil || !errors.Is(res["members"].Err, kerr.NonEmptyGroup) {
		t.Fatalf("deleting a group with a member: %v %+v", err, res)
	}
	if fo, err := adm.FetchOffsets(ctx, "members"); err != nil || fo["dg"][0].At != 3 {
		t.Fatalf("the refused delete touched the offsets: %+v %v", fo, err)
	}

	cons.Close() // leaves the group
	res, err = adm.DeleteGroups(ctx, "members", "offsets-only", "never-was")
	if err != nil {
		t.Fatal(err)
	}
	if res["members"].Err != nil || res["offsets-only"].Err != nil || !errors.Is(res["never-was"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("DeleteGroups: %+v", res)
	}
	for _, g := range []string{"members", "offsets-only"} {
		if fo, err := adm.FetchOffsets(ctx, g); err != nil || len(fo) != 0 {
			t.Fatalf("offsets of deleted group %s: %+v %v", g, fo, err)
		}
	}
	if listed, err := adm.ListGroups(ctx); err != nil || len(listed) != 0 {
		t.Fatalf("groups after deleting them: %+v %v", listed, err)
	}
}
