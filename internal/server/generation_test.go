package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/node/nodetest"
)

// coordinatorNode waits until exactly one running node coordinates groups
// and returns it.
func coordinatorNode(t *testing.T, c *nodetest.Cluster) (*nodetest.Node, *groups.Coordinator) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var found []*nodetest.Node
		var coord *groups.Coordinator
		for _, n := range c.Nodes() {
			s := n.Server()
			if s == nil {
				continue
			}
			gc, err := s.Broker().Coordinator()
			var nc *broker.NotCoordinatorError
			if err == nil {
				found, coord = append(found, n), gc
			} else if !errors.As(err, &nc) {
				t.Fatalf("%s: %v", n.ID, err)
			}
		}
		if len(found) == 1 {
			return found[0], coord
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no single coordinator within 60 s")
	return nil, nil
}

// joinAsKafka joins group g as a Kafka client does (it claims no
// generation).
func joinAsKafka(t *testing.T, gc *groups.Coordinator, memberID string) (groups.JoinResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return gc.JoinGroup(ctx, groups.JoinRequest{Group: "g", MemberID: memberID, ClientID: "kgo",
		SessionTimeout: 30 * time.Second, ProtocolType: groups.ConsumerProtocolType,
		Protocols: []groups.Protocol{{Name: "range", Metadata: []byte("m")}}})
}

// When the metadata leader (the group coordinator) stops, the next one
// hands out generations above every one the first handed out: a zombie
// member of the old coordinator and a member of the new one never share
// a generation (issue 12's torture finding).
func TestClusterCoordinatorFailoverContinuesGenerations(t *testing.T) {
	c := nodetest.NewCluster(t, 3)
	leader, gc := coordinatorNode(t, c)
	res, err := joinAsKafka(t, gc, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := gc.RequestRebalance("g"); err != nil {
			t.Fatal(err)
		}
		if res, err = joinAsKafka(t, gc, res.MemberID); err != nil {
			t.Fatal(err)
		}
	}
	old := res.Generation
	if old != 4 {
		t.Fatalf("generation %d on the first coordinator, want 4", old)
	}

	leader.Stop()
	deadline := time.Now().Add(90 * time.Second)
	for {
		next, gc := coordinatorNode(t, c)
		if next == leader {
			t.Fatal("the stopped node still coordinates")
		}
		res, err = joinAsKafka(t, gc, "")
		if err == nil {
			break
		}
		// The new leader may lose its leadership again meanwhile.
		if !errors.Is(err, groups.ErrCoordinatorClosed) || time.Now().After(deadline) {
			t.Fatalf("join at the new coordinator %s: %v", next.ID, err)
		}
	}
	if res.Generation <= old {
		t.Fatalf("the new coordinator handed out generation %d; the old one had handed out %d", res.Generation, old)
	}
}
