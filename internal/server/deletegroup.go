package server

import (
	"context"

	pb "github.com/logd/logd/proto/logd/v1"
)

// DeleteGroup deletes a group and its committed offsets (on the metadata
// leader, in a cluster).
func (s *Server) DeleteGroup(ctx context.Context, req *pb.DeleteGroupRequest) (*pb.DeleteGroupResponse, error) {
	if err := s.b.Forward().DeleteGroup(ctx, principal(ctx), req.GetGroup()); err != nil {
		return nil, toStatus(err)
	}
	return &pb.DeleteGroupResponse{}, nil
}
