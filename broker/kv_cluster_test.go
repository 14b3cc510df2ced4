package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/partition"
)

// In a 3-node cluster, a get through a node that does not lead the key's
// partition reflects the put acknowledged just before through another
// node; a conditional put through a follower is decided on the leader
// and refused there naming the key's latest offset; the broker's own get
// on a follower refuses (untouched) unless stale, and a stale get reads
// the follower's replica.
func TestKVClusterGetSeesPutThroughAnyNode(t *testing.T) {
	admin := auth.User("admin")
	pr := broker.Principal(admin.String())
	n1 := peerBroker(t, "n1", "", admin)
	waitFor(t, "n1 leads the metadata", n1.Cluster().IsMetaLeader)
	n2 := peerBroker(t, "n2", n1.Cluster().RaftAddr(), admin)
	n3 := peerBroker(t, "n3", n1.Cluster().RaftAddr(), admin)
	nodes := map[string]*broker.Broker{"n1": n1, "n2": n2, "n3": n3}
	waitFor(t, "n2 and n3 joined", func() bool {
		return slices.Equal(n1.Members(), []string{"n1", "n2", "n3"}) && n3.Cluster().MetaLeader().RaftAddr != ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := partition.DefaultConfig("cfg")
	cfg.Partitions, cfg.Replicas = 1, 3
	cfg.Cleanup = partition.DefaultCleanup()
	cfg.Cleanup.Policy = partition.CleanupCompact
	if _, err := n1.CreateTopic(ctx, pr, cfg); err != nil {
		t.Fatal(err)
	}
	var leader string
	waitFor(t, "every node knows the partition's leader", func() bool {
		leader = ""
		for _, b := range nodes {
			info, err := b.Topic(ctx, pr, "cfg")
			if err != nil || len(info.Partitions) != 1 || info.Partitions[0].Leader == "" ||
				(leader != "" && info.Partitions[0].Leader != leader) {
				return false
			}
			leader = info.Partitions[0].Leader
		}
		return true
	})
	var followers []*broker.Broker
	for id, b := range nodes {
		if id != leader {
			followers = append(followers, b)
		}
	}
	for i := range 20 {
		via, from := followers[i%2], followers[(i+1)%2]
		if i%3 == 0 {
			via = nodes[leader]
		}
		want := fmt.Sprintf("v%d", i)
		res, err := via.AnyNode().KVPut(ctx, pr, "cfg", broker.KVPut{Key: []byte("k"), Value: []byte(want)})
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		rec, ok, err := from.AnyNode().KVGet(ctx, pr, "cfg", []byte("k"), broker.KVGetOptions{})
		if err != nil || !ok || string(rec.Value) != want || rec.Offset != res.Offset {
			t.Fatalf("get %d through a follower: %q at %d (found %v, %v); the put was acknowledged at %d with %q",
				i, rec.Value, rec.Offset, ok, err, res.Offset, want)
		}
	}
	last, _, err := followers[0].AnyNode().KVGet(ctx, pr, "cfg", []byte("k"), broker.KVGetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := last.Offset - 1
	_, err = followers[1].AnyNode().KVPut(ctx, pr, "cfg", broker.KVPut{Key: []byte("k"), Value: []byte("x"), Expected: &stale})
	var ce *broker.KeyConflictError
	if !errors.As(err, &ce) || ce.Latest != last.Offset || ce.Expected != stale {
		t.Fatalf("conditional put through a follower expecting %d: %v, want a conflict naming %d", stale, err, last.Offset)
	}
	if _, err := followers[1].AnyNode().KVPut(ctx, pr, "cfg", broker.KVPut{Key: []byte("k"), Value: []byte("y"), Expected: &last.Offset}); err != nil {
		t.Fatalf("conditional put through a follower expecting the latest offset: %v", err)
	}
	var nl *broker.NotLeaderError
	if _, _, err := followers[0].KVGet(ctx, pr, "cfg", []byte("k"), broker.KVGetOptions{}); !errors.As(err, &nl) {
		t.Fatalf("a follower's own linearizable get: %v, want not leader", err)
	}
	waitFor(t, "a stale get on a follower sees the last put", func() bool {
		rec, ok, err := followers[0].KVGet(ctx, pr, "cfg", []byte("k"), broker.KVGetOptions{Stale: true})
		return err == nil && ok && string(rec.Value) == "y"
	})
	page, err := followers[0].AnyNode().KVList(ctx, pr, "cfg", broker.KVListRequest{})
	if err != nil || len(page.Records) != 1 || string(page.Records[0].Value) != "y" {
		t.Fatalf("list through a follower: %+v %v", page, err)
	}
}
