package server_test

// The group coordinator in a cluster: it runs on the metadata leader, the
// other nodes name it, and members follow it through a failover.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/client"
	"github.com/logd/logd/internal/node/nodetest"
	pb "github.com/logd/logd/proto/logd/v1"
)

// coordinatorOf asks every running node for a group and returns the one
// that answers as the coordinator, checking that the others name it.
func coordinatorOf(t *testing.T, cl *nodetest.Cluster, cc *ccs) (string, bool) {
	t.Helper()
	var coord string
	var hints []string
	for _, n := range cl.Nodes() {
		if n.Server() == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := pb.NewGroupsClient(cc.get(n.APIAddr)).DescribeGroup(ctx, &pb.DescribeGroupRequest{Group: "nobody"})
		cancel()
		switch status.Code(err) {
		case codes.NotFound:
			if coord != "" {
				t.Fatalf("two coordinators: %s and %s", coord, n.APIAddr)
			}
			coord = n.APIAddr
		case codes.Unavailable:
			hints = append(hints, leaderHint(err))
		default:
			t.Fatalf("describe on %s: %v", n.APIAddr, err)
		}
	}
	for _, h := range hints {
		if h != coord {
			return "", false // an election under way
		}
	}
	return coord, coord != ""
}

// groupMember polls a GroupConsumer in a goroutine until stopped.
type groupMember struct {
	gc   *client.GroupConsumer
	stop context.CancelFunc
	done chan struct{}
}

func runMember(t *testing.T, c *client.Client) *groupMember {
	t.Helper()
	gc, err := c.NewGroupConsumer(context.Background(), client.GroupConsumerOptions{Group: "billing", Topic: "orders",
		SessionTimeout: 6 * time.Second, MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{gc: gc, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if _, err := gc.Poll(ctx); err != nil && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond) // the cluster is failing over
			}
		}
	}()
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { cancel(); <-m.done; gc.Close() }) })
	return m
}

// splitBetween reports whether the group is Stable with two members that
// share the 4 partitions without overlap, answered by the coordinator at
// want (any when empty).
func splitBetween(admin *client.Admin, want string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := admin.DescribeGroup(ctx, "billing")
	if err != nil || d.State != "Stable" || len(d.Members) != 2 || (want != "" && d.Coordinator != want) {
		return false
	}
	var all []int32
	for _, m := range d.Members {
		if len(m.Assignment["orders"]) != 2 {
			return false
		}
		all = append(all, m.Assignment["orders"]...)
	}
	slices.Sort(all)
	return slices.Equal(all, []int32{0, 1, 2, 3})
}

func TestClusterGroupCoordinatorOnMetadataLeaderAndFailover(t *testing.T) {
	cl := nodetest.NewCluster(t, 3)
	cc := newCCs(t, cl.Addrs()...)
	var coord string
	waitUntil(t, 30*time.Second, "one coordinator that the other nodes name", func() bool {
		var ok bool
		coord, ok = coordinatorOf(t, cl, cc)
		return ok
	})

	// The client knows only the nodes that do not coordinate: it follows
	// their answer to the coordinator.
	var seeds []string
	for _, a := range cl.Addrs() {
		if a != coord {
			seeds = append(seeds, a)
		}
	}
	c, err := client.Dial(strings.Join(seeds, ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Admin().CreateTopic(context.Background(), "orders", client.TopicOptions{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	runMember(t, c)
	runMember(t, c)
	waitUntil(t, 40*time.Second, "two members split the partitions on the coordinator", func() bool { return splitBetween(c.Admin(), coord) })

	// The coordinator's node stops: a new metadata leader coordinates, and
	// the members re-join there and share the partitions again.
	for _, n := range cl.Nodes() {
		if n.APIAddr == coord {
			n.Stop()
		}
	}
	var next string
	waitUntil(t, 60*time.Second, "a new coordinator", func() bool {
		var ok bool
		next, ok = coordinatorOf(t, cl, cc)
		return ok
	})
	if next == coord {
		t.Fatalf("the stopped node %s still coordinates", coord)
	}
	waitUntil(t, 60*time.Second, "the members share the partitions on the new coordinator", func() bool { return splitBetween(c.Admin(), next) })
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
