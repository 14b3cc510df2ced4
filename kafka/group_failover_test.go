package kafka_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/internal/node/nodetest"
)

// groupReq sends a group request until the coordinator answers it:
// errors of the request itself and the coordinator codes a client retries
// on (the metadata leader changing) are tried again. It returns the
// answer's error code.
func groupReq(t *testing.T, cl *kgo.Client, what string, req kmsg.Request, code func(kmsg.Response) int16) kmsg.Response {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		resp, err := cl.Request(ctx, req)
		cancel()
		if err == nil {
			switch code(resp) {
			case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
			default:
				return resp
			}
			err = kerr.ErrorForCode(code(resp))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type kafkaMember struct {
	id  string
	gen int32
}

// joinGF joins group gf (the empty id: a new member) and returns its id,
// generation and leader.
func joinGF(t *testing.T, cl *kgo.Client, id string) (kafkaMember, string) {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"gf"}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = "gf", id, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30_000, 30_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	resp := groupReq(t, cl, "join", req, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != 0 {
		t.Errorf("join of %q: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return kafkaMember{id: resp.MemberID, gen: resp.Generation}, resp.LeaderID
}

func heartbeatGF(t *testing.T, cl *kgo.Client, m kafkaMember) error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = "gf", m.id, m.gen
	resp := groupReq(t, cl, "heartbeat", req, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode })
	return kerr.ErrorForCode(resp.(*kmsg.HeartbeatResponse).ErrorCode)
}

func commitGF(t *testing.T, cl *kgo.Client, m kafkaMember, p int32, offset int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = "gf", m.id, m.gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "gf"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	code := func(r kmsg.Response) int16 {
		for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
		return kerr.UnknownServerError.Code
	}
	return kerr.ErrorForCode(code(groupReq(t, cl, "commit", req, code)))
}

// syncGF syncs m; the leader gives each member one partition.
func syncGF(t *testing.T, cl *kgo.Client, m kafkaMember, leader bool, all []kafkaMember) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = "gf", m.id, m.gen
	if leader {
		for i, o := range all {
			a := kmsg.NewConsumerMemberAssignment()
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = "gf", []int32{int32(i)}
			a.Topics = append(a.Topics, at)
			sa := kmsg.NewSyncGroupRequestGroupAssignment()
			sa.MemberID, sa.MemberAssignment = o.id, a.AppendTo(nil)
			req.GroupAssignment = append(req.GroupAssignment, sa)
		}
	}
	resp := groupReq(t, cl, "sync", req, func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }).(*kmsg.SyncGroupResponse)
	if resp.ErrorCode != 0 || len(resp.MemberAssignment) == 0 {
		t.Errorf("sync of %s: %v, assignment of %d bytes", m.id, kerr.ErrorForCode(resp.ErrorCode), len(resp.MemberAssignment))
	}
}

// metaLeaderNode is the node that coordinates the groups now.
func metaLeaderNode(t *testing.T, c *nodetest.Cluster) *nodetest.Node {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range c.Nodes() {
			if s := n.Server(); s != nil {
				if err := s.Broker().CoordinatesGroups(); err == nil {
					return n
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no node coordinates the groups")
	return nil
}

// When the metadata leader (the group coordinator) stops, the members of
// a group carry on at the next one as if nothing happened: their
// heartbeats and commits in their generation are accepted (Kafka keeps a
// group's membership across a coordinator move), and the next rebalance
// hands out a generation above every one before.
func TestClusterGroupSurvivesCoordinatorMove(t *testing.T) {
	addrs, c := startClusterWith(t)
	var seeds []string
	for _, a := range addrs {
		seeds = append(seeds, a)
	}
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	if _, err := kadm.NewClient(cl).CreateTopic(testCtx(t), 3, 3, nil, "gf"); err != nil {
		t.Fatal(err)
	}

	var ms [2]kafkaMember
	var leaders [2]string
	var wg sync.WaitGroup
	for i := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); ms[i], leaders[i] = joinGF(t, cl, "") }()
	}
	wg.Wait()
	if t.Failed() || ms[0].gen != ms[1].gen {
		t.Fatalf("members %+v", ms)
	}
	all := ms[:]
	for i := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); syncGF(t, cl, ms[i], ms[i].id == leaders[0], all) }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if err := commitGF(t, cl, ms[0], 0, 0); err != nil {
		t.Fatalf("commit before the move: %v", err)
	}

	old := metaLeaderNode(t, c)
	old.Stop()
	for i, m := range ms {
		if err := heartbeatGF(t, cl, m); err != nil {
			t.Fatalf("member %d's heartbeat in generation %d after the coordinator moved: %v", i, m.gen, err)
		}
	}
	if err := commitGF(t, cl, ms[1], 1, 0); err != nil {
		t.Fatalf("commit in generation %d after the coordinator moved: %v", ms[1].gen, err)
	}
	if n := metaLeaderNode(t, c); n == old {
		t.Fatal("the stopped node coordinates")
	}

	// A new member: once the members see the rebalance, everyone joins
	// the next generation, above the old one.
	var next [3]kafkaMember
	ids := []string{ms[0].id, ms[1].id, ""}
	wg.Add(1)
	go func() { defer wg.Done(); next[2], _ = joinGF(t, cl, "") }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := heartbeatGF(t, cl, ms[0])
		if errors.Is(err, kerr.RebalanceInProgress) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("heartbeat while a new member joins: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); next[i], _ = joinGF(t, cl, ids[i]) }()
	}
	wg.Wait()
	for i, m := range next {
		if m.gen <= ms[0].gen || (i < 2 && m.id != ms[i].id) {
			t.Fatalf("member %d joined as %+v; before the move %+v", i, m, ms)
		}
	}
	if err := heartbeatGF(t, cl, ms[0]); !errors.Is(err, kerr.IllegalGeneration) && !errors.Is(err, kerr.RebalanceInProgress) {
		t.Fatalf("heartbeat in the old generation: %v", err)
	}
}
