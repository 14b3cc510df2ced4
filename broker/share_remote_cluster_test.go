package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/share"
)

// In a cluster the share offsets admin calls and the describe, made of the
// group coordinator, read and change a share partition led by another
// node there: its start offset described, altered and deleted back to
// share.auto.offset.reset, its backlog and the age of its oldest record
// not acknowledged shown; a principal without describe on the topic is
// refused the partition; a member that leaves at the coordinator has its
// records on the partition's leader released there.
func TestShareAdminReachesThePartitionLeader(t *testing.T) {
	admin := auth.User("admin")
	pr := broker.Principal(admin.String())
	nodes := threeNodes(t, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var coord string
	waitFor(t, "a node coordinates the groups", func() bool {
		for id, b := range nodes {
			if b.CoordinatesGroups() == nil {
				coord = id
				return true
			}
		}
		return false
	})
	q := partition.DefaultConfig("q")
	q.Partitions, q.Replicas = 1, 1
	if _, err := nodes["n1"].CreateTopic(ctx, pr, q); err != nil {
		t.Fatal(err)
	}
	lead := leaderOf(t, nodes, pr, "q", "")
	if lead == coord {
		to := map[string]string{"n1": "n2", "n2": "n3", "n3": "n1"}[coord]
		errs, err := nodes["n1"].MovePartitions(ctx, pr, []broker.PartitionMove{{Topic: "q", Replicas: []string{to}}})
		if err != nil || errs[0] != nil {
			t.Fatalf("move q to %s: %v %v", to, err, errs)
		}
		lead = leaderOf(t, nodes, pr, "q", coord)
	}
	C, L := nodes[coord], nodes[lead]
	old := time.Now().Add(-time.Minute).UnixMilli()
	src := batch.Encode(nil, 0, batch.NoProducer, []batch.Record{
		{Timestamp: old, Value: []byte("a")}, {Timestamp: old, Value: []byte("b")}, {Timestamp: old, Value: []byte("c")}})
	if _, err := L.Produce(ctx, broker.ProduceRequest{Principal: pr, Topic: "q", Batch: src}); err != nil {
		t.Fatal(err)
	}
	if err := L.SetShareGroupConfig(ctx, pr, "g", map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "600000"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, lead+" applied the group's config", func() bool { return L.ShareGroupConfigOf("g").AutoOffsetReset == "earliest" })
	if _, err := C.ShareHeartbeat(ctx, broker.ShareHeartbeatRequest{Principal: pr, Group: "g", Member: "m", Topics: []string{"q"}}); err != nil {
		t.Fatal(err)
	}
	// The member accepts offset 0 on q's leader.
	res, err := L.ShareFetch(ctx, broker.ShareFetchRequest{Principal: pr, Group: "g", Member: "m", MaxRecords: 10,
		Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q"}}}})
	if err != nil || len(acquired(res)) != 1 {
		t.Fatalf("share fetch on %s: %+v %v", lead, res, err)
	}
	if _, err := L.ShareAcknowledge(ctx, broker.ShareFetchRequest{Principal: pr, Group: "g", Member: "m", SessionEpoch: 1,
		Partitions: []broker.ShareFetchPartition{{SharePartition: broker.SharePartition{Topic: "q"},
			Acks: []broker.ShareAck{{First: 0, Last: 0, Types: []share.AckType{share.Accept}}}}}}); err != nil {
		t.Fatal(err)
	}
	startOf := func() int64 {
		t.Helper()
		offs, err := C.DescribeShareGroupOffsets(ctx, pr, "g", []broker.SharePartition{{Topic: "q"}})
		if err != nil || len(offs) != 1 || offs[0].Err != nil {
			t.Fatalf("describe share group offsets on %s (q led by %s): %+v %v", coord, lead, offs, err)
		}
		return offs[0].Start
	}
	if s := startOf(); s != 1 {
		t.Fatalf("start after accepting offset 0: %d, want 1", s)
	}
	d, err := C.DescribeShareGroup(ctx, pr, "g")
	if err != nil || len(d.Partitions) != 1 {
		t.Fatalf("describe on %s: %+v %v", coord, d, err)
	}
	if p := d.Partitions[0]; p.Start != 1 || p.Backlog != 2 || p.Acquired != 2 || p.OldestAge < 59*time.Second {
		t.Fatalf("share partition described: %+v", p)
	}

	// Refused: no describe on the topic.
	bob := broker.Principal(auth.User("bob").String())
	if err := C.AddACLs(ctx, pr, auth.ACL{Principal: auth.User("bob"), Permission: auth.Allow, Operation: auth.OpDescribe,
		ResourceType: auth.Group("g").Type, PatternType: auth.PatternLiteral, Name: "g"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob may describe g", func() bool {
		_, err := C.DescribeShareGroupOffsets(ctx, bob, "g", []broker.SharePartition{{Topic: "q"}})
		return err == nil
	})
	offs, err := C.DescribeShareGroupOffsets(ctx, bob, "g", []broker.SharePartition{{Topic: "q"}})
	if err != nil || len(offs) != 1 || !errors.Is(offs[0].Err, auth.ErrDenied) {
		t.Fatalf("bob's describe: %+v %v, want the partition denied", offs, err)
	}
	if d, err := C.DescribeShareGroup(ctx, bob, "g"); err != nil || len(d.Partitions) != 0 {
		t.Fatalf("bob's describe of g: %+v %v, want no partitions", d, err)
	}

	// The member leaves at the coordinator: what it holds on q's leader
	// goes back at once, not when its ten-minute locks expire.
	if _, err := C.ShareHeartbeat(ctx, broker.ShareHeartbeatRequest{Principal: pr, Group: "g", Member: "m", MemberEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the records m held on "+lead+" released", func() bool {
		d, err := C.DescribeShareGroup(ctx, pr, "g")
		return err == nil && len(d.Partitions) == 1 && d.Partitions[0].Acquired == 0 && d.Partitions[0].Available == 2
	})

	// Alter and delete, once the group is empty.
	if out, err := C.AlterShareGroupOffsets(ctx, pr, "g", []broker.ShareOffset{{SharePartition: broker.SharePartition{Topic: "q"}, Start: 2}}); err != nil || out[0].Err != nil {
		t.Fatalf("alter on %s: %+v %v", coord, out, err)
	}
	if s := startOf(); s != 2 {
		t.Fatalf("start after the alter: %d, want 2", s)
	}
	if out, err := C.DeleteShareGroupOffsets(ctx, pr, "g", []string{"q"}); err != nil || out[0].Err != nil {
		t.Fatalf("delete on %s: %+v %v", coord, out, err)
	}
	if s := startOf(); s != 0 {
		t.Fatalf("start after the delete (earliest): %d, want 0", s)
	}
}
