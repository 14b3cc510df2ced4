package server

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/cluster"
	pb "github.com/logd/logd/proto/logd/v1"
	"github.com/logd/logd/replication/meta"
)

// forwardedKey marks a request one node forwarded to another: the
// receiver answers it or fails, and never forwards it again.
const forwardedKey = "logd-forwarded"

// maxHops bounds how many "not leader" answers a forwarded call follows.
const maxHops = 3

// forwarder holds connections to the other nodes' APIs, for requests a
// node passes on: metadata requests to the metadata leader, offset lookups
// to a partition's leader, status from every node. It is the cluster's
// Peers.
type forwarder struct {
	creds credentials.TransportCredentials // TLS, or plaintext
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// newForwarder dials other nodes with tc (nil: plaintext).
func newForwarder(tc *tls.Config) *forwarder {
	f := &forwarder{conns: map[string]*grpc.ClientConn{}, creds: insecure.NewCredentials()}
	if tc != nil {
		f.creds = credentials.NewTLS(tc)
	}
	return f
}

func (f *forwarder) conn(addr string) (*grpc.ClientConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(f.creds))
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
	ctx = metadata.AppendToOutgoingContext(forwardAuth(ctx), forwardedKey, "1")
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

// Status implements cluster.Peers: the node's local view.
func (f *forwarder) Status(ctx context.Context, addr string) (cluster.Status, error) {
	resp := &pb.ClusterStatusResponse{}
	if err := f.invoke(ctx, addr, pb.Cluster_Status_FullMethodName, &pb.ClusterStatusRequest{Local: true}, resp); err != nil {
		return cluster.Status{}, err
	}
	st := cluster.Status{Self: resp.Self}
	for _, n := range resp.Nodes {
		st.Nodes = append(st.Nodes, cluster.NodeStatus{Node: meta.Node{ID: n.Id, APIAddr: n.ApiAddr, RaftAddr: n.RaftAddr,
			KafkaAddr: n.KafkaAddr, HTTPAddr: n.HttpAddr, KafkaID: n.KafkaId}, Alive: n.Alive})
	}
	for _, p := range resp.Partitions {
		st.Partitions = append(st.Partitions, cluster.ReplicaStatus{Topic: p.Topic, Partition: p.Partition,
			Leader: p.Leader, Replicas: p.Replicas, CommitIndex: p.CommitIndex, Term: p.Term,
			AppliedIndex: p.AppliedIndex, LastIndex: p.LastIndex, RaftState: p.RaftState})
	}
	return st, nil
}

// ListOffset implements cluster.Peers.
func (f *forwarder) ListOffset(ctx context.Context, addr, topic string, part int32, spec int64) (cluster.PartitionOffset, error) {
	req := &pb.ListOffsetsRequest{Topic: topic, Partitions: []int32{part}}
	switch spec {
	case cluster.Earliest:
		req.Spec = pb.OffsetSpec_OFFSET_SPEC_EARLIEST
	case cluster.Latest:
		req.Spec = pb.OffsetSpec_OFFSET_SPEC_LATEST
	default:
		req.Spec, req.TimestampMs = pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP, spec
	}
	resp := &pb.ListOffsetsResponse{}
	if err := f.invoke(ctx, addr, pb.Log_ListOffsets_FullMethodName, req, resp); err != nil {
		if status.Code(err) == codes.Unavailable {
			// No leader there right now: errors.Is(err, kind.ErrUnavailable),
			// so a request over many partitions asks again (eachPartition).
			return cluster.PartitionOffset{}, fromStatus(err)
		}
		return cluster.PartitionOffset{}, err
	}
	if len(resp.Partitions) != 1 {
		return cluster.PartitionOffset{}, errors.New("list offsets of " + topic + ": the leader answered another number of partitions than 1")
	}
	po := resp.Partitions[0]
	return cluster.PartitionOffset{Offset: po.Offset, LogStart: po.LogStartOffset, HighWatermark: po.HighWatermark}, nil
}

// forwardedIn reports whether an incoming request was forwarded by
// another node (its metadata carries forwardedKey).
func forwardedIn(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(forwardedKey)) > 0
}

// forward passes a request the broker did not act on to the node that
// leads what it needs: err is the broker's answer. It reports whether it
// forwarded (and the leader's answer, in resp), else returns err. A
// request that was itself forwarded is never passed on again.
func (s *Server) forward(ctx context.Context, err error, method string, req, resp any) (bool, error) {
	var nl *broker.NotLeaderError
	if !errors.As(err, &nl) || !nl.Untouched || nl.Leader.APIAddr == "" || cluster.Forwarded(ctx) {
		return false, err
	}
	return true, s.fwd.invoke(ctx, nl.Leader.APIAddr, method, req, resp)
}
