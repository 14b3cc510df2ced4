package server

import (
	"context"

	pb "github.com/logd/logd/proto/logd/v1"
)

// selfID names a node that runs alone.
const selfID = "1"

// Status reports the node and its partitions. A node that runs alone leads
// every partition.
func (s *Server) Status(ctx context.Context, req *pb.ClusterStatusRequest) (*pb.ClusterStatusResponse, error) {
	resp := &pb.ClusterStatusResponse{Self: selfID}
	resp.Nodes = append(resp.Nodes, &pb.NodeStatus{Id: selfID, ApiAddr: s.Addr(), Alive: true})
	for _, c := range s.topics.List() {
		_, parts, err := s.topics.Partitions(c.Name)
		if err != nil {
			continue
		}
		for _, p := range parts {
			resp.Partitions = append(resp.Partitions, &pb.PartitionStatus{
				Topic: p.Topic, Partition: p.ID, Leader: selfID, Replicas: []string{selfID}, RaftState: "Leader (single node)",
			})
		}
	}
	return resp, nil
}
