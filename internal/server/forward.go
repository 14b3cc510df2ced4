package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
)

// forwardedKey marks a request one node forwarded to another: the
// receiver answers it or fails, and never forwards it again.
const forwardedKey = "logd-forwarded"

// maxHops bounds how many "not leader" answers a forwarded call follows.
const maxHops = 3

// forwarder holds connections to the other nodes' APIs, for requests a
// node passes on: metadata writes to the metadata leader, offset lookups to
// a partition's leader, status from every node.
type forwarder struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newForwarder() *forwarder { return &forwarder{conns: map[string]*grpc.ClientConn{}} }

func (f *forwarder) conn(addr string) (*grpc.ClientConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	f.conns[addr] = c
	return c, nil
}

func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = map[string]*grpc.ClientConn{}
}

// invoke calls method on addr, following "not leader" answers.
func (f *forwarder) invoke(ctx context.Context, addr, method string, req, resp any) error {
	ctx = metadata.AppendToOutgoingContext(ctx, forwardedKey, "1")
	for hop := 0; ; hop++ {
		c, err := f.conn(addr)
		if err != nil {
			return err
		}
		err = c.Invoke(ctx, method, req, resp)
		next := leaderHint(err)
		if err == nil || next == "" || next == addr || hop >= maxHops {
			return err
		}
		addr = next
	}
}

func (f *forwarder) join(ctx context.Context, addr string, n meta.Node) error {
	return f.invoke(ctx, addr, pb.Cluster_Join_FullMethodName,
		&pb.JoinRequest{NodeId: n.ID, ApiAddr: n.APIAddr, RaftAddr: n.RaftAddr}, &pb.JoinResponse{})
}

// forwarded reports whether ctx is a request another node forwarded.
func forwarded(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(forwardedKey)) > 0
}

// leaderHint is the API address a "not leader" status names, or "".
func leaderHint(err error) string {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return ""
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.GetMetadata()["leader"]
		}
	}
	return ""
}

// notLeader is the UNAVAILABLE answer of a node that does not lead p:
// leader, when known, is the API address to ask instead (clients follow
// it transparently).
func notLeader(p *partition.Partition, leader string) error {
	return unavailableLeader(fmt.Sprintf("partition %s", p.Name()), leader)
}

func unavailableLeader(what, leader string) error {
	if leader == "" {
		return status.Errorf(codes.Unavailable, "%s has no leader right now (an election is under way, or too few replicas are up): retry shortly", what)
	}
	st := status.Newf(codes.Unavailable, "this node does not lead %s: the leader is at %s", what, leader)
	st2, err := st.WithDetails(&errdetails.ErrorInfo{Reason: "NOT_LEADER", Domain: errorDomain,
		Metadata: map[string]string{"leader": leader}})
	if err != nil {
		return st.Err()
	}
	return st2.Err()
}

// metaWrite runs a metadata write on the metadata leader: here when this
// node leads the metadata group (after a barrier, so its state is
// current), else by forwarding the request to the leader.
func metaWrite[Req, Resp any](s *Server, ctx context.Context, method string, req Req, resp Resp, here func() (Resp, error)) (Resp, error) {
	c := s.cl
	if c.meta.IsLeader() {
		if err := c.meta.Barrier(5 * time.Second); err != nil {
			return resp, s.clusterStatus(err)
		}
		return here()
	}
	if forwarded(ctx) {
		return resp, unavailableLeader("the cluster metadata", c.metaLeaderAPI())
	}
	lead := c.metaLeaderAPI()
	if lead == "" {
		return resp, unavailableLeader("the cluster metadata", "")
	}
	if err := c.fwd.invoke(ctx, lead, method, req, resp); err != nil {
		return resp, err
	}
	return resp, nil
}

// clusterStatus maps replication errors to statuses; others go to
// toStatus.
func (s *Server) clusterStatus(err error) error {
	var nl *replication.NotLeaderError
	switch {
	case errors.As(err, &nl):
		what := "the cluster metadata"
		if nl.Group != replication.MetaGroup {
			what = "partition group " + nl.Group
		}
		addr := ""
		if s.cl != nil && nl.LeaderID != "" {
			addr = s.cl.apiAddr(string(nl.LeaderID))
		}
		return unavailableLeader(what, addr)
	case errors.Is(err, replication.ErrOutcomeUnknown):
		return status.Errorf(codes.Unavailable, "%v: the outcome is unknown; retry (an idempotent producer's retry is not duplicated)", err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return toStatus(errShuttingDown)
	}
	st := toStatus(err)
	if status.Code(st) == codes.Internal {
		// A failure on the Raft path (the leader's disk, a lost leader):
		// the append may or may not have happened; a retry is safe.
		return status.Errorf(codes.Unavailable, "%v: retry (an idempotent producer's retry is not duplicated)", err)
	}
	return st
}

// listOffset answers ListOffsets for one partition this node does not
// lead by asking its leader; nil when this node leads it (answer locally).
func (c *cluster) listOffset(ctx context.Context, p *partition.Partition, req *pb.ListOffsetsRequest) (*pb.PartitionOffset, error) {
	r, err := c.replica(p)
	if err == nil {
		// Served here: the answer (the high watermark) must be current.
		return nil, c.linearizable(ctx, r, "partition "+p.Name())
	}
	lead := leaderHint(err)
	if lead == "" || forwarded(ctx) {
		return nil, err
	}
	one := &pb.ListOffsetsRequest{Topic: req.Topic, Partitions: []int32{p.ID}, Spec: req.Spec, TimestampMs: req.TimestampMs}
	resp := &pb.ListOffsetsResponse{}
	if err := c.fwd.invoke(ctx, lead, pb.Log_ListOffsets_FullMethodName, one, resp); err != nil {
		return nil, err
	}
	if len(resp.Partitions) != 1 {
		return nil, status.Errorf(codes.Internal, "list offsets of %s: the leader answered %d partitions", p.Name(), len(resp.Partitions))
	}
	return resp.Partitions[0], nil
}

// leads reports whether this node leads p's group.
func (c *cluster) leads(p *partition.Partition) bool {
	_, err := c.replica(p)
	return err == nil
}

// partitionLog is p's log for resolving offsets: the local log when this
// node leads p, else the leader's answers to ListOffsets.
func (c *cluster) partitionLog(ctx context.Context, p *partition.Partition) (offsets.PartitionLog, error) {
	req := &pb.ListOffsetsRequest{Topic: p.Topic, Spec: pb.OffsetSpec_OFFSET_SPEC_LATEST}
	po, err := c.listOffset(ctx, p, req)
	if err != nil {
		return nil, err
	}
	if po == nil {
		return p.Log, nil
	}
	return offsets.LogFuncs{
		Start: func() int64 { return po.LogStartOffset },
		HW:    func() int64 { return po.HighWatermark },
		ForTime: func(ts int64) (int64, error) {
			at, err := c.listOffset(ctx, p, &pb.ListOffsetsRequest{Topic: p.Topic, Spec: pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP, TimestampMs: ts})
			if err != nil {
				return 0, err
			}
			if at == nil {
				return p.Log.OffsetForTime(ts)
			}
			return at.Offset, nil
		},
	}, nil
}

// readConfirmer is a Raft group whose leader serves reads: a partition's
// replica or the metadata group.
type readConfirmer interface {
	ConfirmRead(ctx context.Context) error
}

// linearizable makes a read served by the leader of group g current:
// every record (or metadata change) acknowledged before it is applied
// here, and this replica still leads. Without it a leader cut off from the
// others (or paused past an election) would answer from its stale state.
// The proof is a barrier started after the read arrived (g.ConfirmRead:
// replication.ReadIndex, which says why Raft's VerifyLeader is not one),
// shared by concurrent reads. A node that turns out not to lead answers
// UNAVAILABLE naming the leader.
func (c *cluster) linearizable(ctx context.Context, g readConfirmer, what string) error {
	err := g.ConfirmRead(ctx)
	if err == nil {
		return nil
	}
	var nl *replication.NotLeaderError
	if errors.As(err, &nl) {
		return unavailableLeader(what, c.apiAddr(string(nl.LeaderID)))
	}
	return status.Errorf(codes.Unavailable, "%s: cannot confirm this node still leads (%v): retry", what, err)
}

// topicLookup answers a request for a topic this node does not have. On a
// single node the topic does not exist. In a cluster this node may only be
// behind: the metadata lists the topic and the node has not created it yet
// (it answers UNAVAILABLE: retry), or the node has not heard of a topic
// just created (it sends the client to the metadata leader, which knows).
// Only the metadata leader, current, answers NOT_FOUND.
func (s *Server) topicLookup(ctx context.Context, topic string, err error) error {
	if s.cl == nil || !errors.Is(err, partition.ErrTopicNotFound) {
		return toStatus(err)
	}
	c := s.cl
	if _, ok := c.meta.FSM.State().Topics[topic]; ok {
		return status.Errorf(codes.Unavailable, "topic %q is being set up on this node: retry", topic)
	}
	if !c.meta.IsLeader() {
		if lead := c.metaLeaderAPI(); lead != "" && !forwarded(ctx) {
			return unavailableLeader("the cluster metadata (this node has not heard of topic "+strconv.Quote(topic)+" yet)", lead)
		}
		return unavailableLeader("the cluster metadata", "")
	}
	if err := c.linearizable(ctx, c.meta, "the cluster metadata"); err != nil {
		return err
	}
	if _, ok := c.meta.FSM.State().Topics[topic]; ok {
		return status.Errorf(codes.Unavailable, "topic %q is being set up on this node: retry", topic)
	}
	return toStatus(err)
}
