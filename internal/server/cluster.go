package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/broker"
	pb "github.com/logd/logd/proto/logd/v1"
)

// Status reports the nodes and every partition's leader, replicas and Raft
// state (see broker.ClusterStatus). A node that runs alone leads every
// partition.
func (s *Server) Status(ctx context.Context, req *pb.ClusterStatusRequest) (*pb.ClusterStatusResponse, error) {
	st, err := s.b.ClusterStatus(ctx, principal(ctx), req.Local)
	return reply(statusResponse(st), err)
}

func statusResponse(st broker.Status) *pb.ClusterStatusResponse {
	return &pb.ClusterStatusResponse{Self: st.Self,
		Nodes: each(st.Nodes, func(n broker.NodeStatus) *pb.NodeStatus {
			return &pb.NodeStatus{Id: n.ID, ApiAddr: n.APIAddr, RaftAddr: n.RaftAddr, Alive: n.Alive,
				KafkaAddr: n.KafkaAddr, HttpAddr: n.HTTPAddr, KafkaId: n.KafkaID}
		}),
		Partitions: each(st.Partitions, func(p broker.ReplicaStatus) *pb.PartitionStatus {
			return &pb.PartitionStatus{Topic: p.Topic, Partition: p.Partition,
				Leader: p.Leader, Replicas: p.Replicas, CommitIndex: p.CommitIndex, Term: p.Term, RaftState: p.RaftState,
				AppliedIndex: p.AppliedIndex, LastIndex: p.LastIndex}
		})}
}

// Join is refused: joining is a node-to-node operation. A node joins by
// starting with --join, over the Raft port's peer channel (package
// cluster), where only a node of this cluster (its cluster id, and the
// Raft port's mutual TLS when configured) can ask, and the metadata leader
// adds it only once it answers at its Raft address with its id. Through
// this public API anyone could re-address a member or add a voter that
// does not exist.
func (s *Server) Join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "nodes join the cluster themselves, node to node over the Raft port: "+
		"start the node with --join ADDR (any member's API address); this API does not change membership")
}

// RemoveNode removes a node from the cluster: each of its replicas moves to
// the least loaded other node, the partitions' leaders change their groups
// to match, and the node leaves the metadata group.
func (s *Server) RemoveNode(ctx context.Context, req *pb.RemoveNodeRequest) (*pb.RemoveNodeResponse, error) {
	moved, err := s.b.Forward().RemoveNode(ctx, principal(ctx), req.NodeId)
	return reply(&pb.RemoveNodeResponse{Moved: moved}, err)
}
