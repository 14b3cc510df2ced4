package client

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// ClusterStatus is what a node knows of its cluster.
type ClusterStatus struct {
	Self       string // the answering node's id
	Nodes      []NodeStatus
	Partitions []PartitionStatus
}

// NodeStatus is one node of the cluster.
type NodeStatus struct {
	ID       string
	APIAddr  string
	RaftAddr string
	Alive    bool
	// KafkaID is the node's broker id in the Kafka protocol (what Kafka
	// tools show), KafkaAddr and HTTPAddr its other listeners ("" when off).
	KafkaID   int32
	KafkaAddr string
	HTTPAddr  string
}

// PartitionStatus is one partition's replication state.
type PartitionStatus struct {
	Topic       string
	Partition   int32
	Leader      string // node id
	Replicas    []string
	CommitIndex uint64
	RaftState   string
	Term        uint64
}

// ClusterStatus asks the node the Client was dialled with.
func (a *Admin) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	var resp *logdv1.ClusterStatusResponse
	err := a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewClusterClient(cc).Status(ctx, &logdv1.ClusterStatusRequest{})
		return err
	})
	if err != nil {
		return ClusterStatus{}, fmt.Errorf("cluster status: %w", err)
	}
	cs := ClusterStatus{Self: resp.GetSelf()}
	for _, n := range resp.GetNodes() {
		cs.Nodes = append(cs.Nodes, NodeStatus{ID: n.GetId(), APIAddr: n.GetApiAddr(), RaftAddr: n.GetRaftAddr(), Alive: n.GetAlive(),
			KafkaID: n.GetKafkaId(), KafkaAddr: n.GetKafkaAddr(), HTTPAddr: n.GetHttpAddr()})
	}
	for _, p := range resp.GetPartitions() {
		cs.Partitions = append(cs.Partitions, PartitionStatus{
			Topic: p.GetTopic(), Partition: p.GetPartition(), Leader: p.GetLeader(), Replicas: p.GetReplicas(),
			CommitIndex: p.GetCommitIndex(), RaftState: p.GetRaftState(), Term: p.GetTerm(),
		})
	}
	return cs, nil
}

// RemoveNode removes a node from the cluster; its partition replicas move
// to the remaining nodes. It returns the partitions whose replica moved, as
// "topic/partition".
func (a *Admin) RemoveNode(ctx context.Context, id string) ([]string, error) {
	var resp *logdv1.RemoveNodeResponse
	err := a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) (err error) {
		resp, err = logdv1.NewClusterClient(cc).RemoveNode(ctx, &logdv1.RemoveNodeRequest{NodeId: id})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("remove node %s: %w", id, err)
	}
	return resp.GetMoved(), nil
}
