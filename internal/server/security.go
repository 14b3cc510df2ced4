package server

import (
	"context"
	"errors"

	"github.com/logd/logd/auth"
	pb "github.com/logd/logd/proto/logd/v1"
)

// The gRPC Security service: users and ACLs (broker/users.go). Writes a
// node that does not lead the metadata refuses are passed on to the
// leader by the broker (Forward), for the same principal.
type securityServer struct {
	pb.UnimplementedSecurityServer
	s *Server
}

func (x *securityServer) CreateUser(ctx context.Context, req *pb.CreateUserRequest) (*pb.CreateUserResponse, error) {
	return reply(&pb.CreateUserResponse{}, x.s.b.Forward().CreateUser(ctx, principal(ctx), req.Name, req.Password, req.Replace))
}

func (x *securityServer) DeleteUser(ctx context.Context, req *pb.DeleteUserRequest) (*pb.DeleteUserResponse, error) {
	return reply(&pb.DeleteUserResponse{}, x.s.b.Forward().DeleteUser(ctx, principal(ctx), req.Name))
}

func (x *securityServer) ListUsers(ctx context.Context, req *pb.ListUsersRequest) (*pb.ListUsersResponse, error) {
	names, err := x.s.b.Users(ctx, principal(ctx))
	return reply(&pb.ListUsersResponse{Names: names}, err)
}

func (x *securityServer) AddACLs(ctx context.Context, req *pb.AddACLsRequest) (*pb.AddACLsResponse, error) {
	acls := make([]auth.ACL, len(req.Acls))
	for i, a := range req.Acls {
		acl, err := aclFromPB(a)
		if err != nil {
			return nil, invalidArg("ACL %d: %v", i+1, err)
		}
		acls[i] = acl
	}
	return reply(&pb.AddACLsResponse{}, x.s.b.Forward().AddACLs(ctx, principal(ctx), acls...))
}

func (x *securityServer) RemoveACLs(ctx context.Context, req *pb.RemoveACLsRequest) (*pb.RemoveACLsResponse, error) {
	f, err := filterFromPB(req.Filter)
	if err != nil {
		return nil, invalidArg("ACL filter: %v", err)
	}
	removed, err := x.s.b.Forward().RemoveACLs(ctx, principal(ctx), f)
	return reply(&pb.RemoveACLsResponse{Removed: each(removed, aclPB)}, err)
}

func (x *securityServer) ListACLs(ctx context.Context, req *pb.ListACLsRequest) (*pb.ListACLsResponse, error) {
	f, err := filterFromPB(req.Filter)
	if err != nil {
		return nil, invalidArg("ACL filter: %v", err)
	}
	acls, err := x.s.b.ListACLs(ctx, principal(ctx), f)
	return reply(&pb.ListACLsResponse{Acls: each(acls, aclPB)}, err)
}

// aclFromPB reads a whole ACL (every field set).
func aclFromPB(a *pb.ACL) (auth.ACL, error) {
	if a == nil {
		return auth.ACL{}, errMissingACL
	}
	return aclText(a).ACL()
}

var errMissingACL = errors.New("no ACL given")

// filterFromPB reads an ACL filter (auth.ACLText.Filter): unset fields,
// or no filter, match anything.
func filterFromPB(a *pb.ACL) (auth.ACLFilter, error) {
	if a == nil {
		return auth.ACLFilter{}, nil
	}
	return aclText(a).Filter()
}

func aclText(a *pb.ACL) auth.ACLText {
	return auth.ACLText{Principal: a.Principal, Permission: a.Permission, Operation: a.Operation,
		ResourceType: a.ResourceType, PatternType: a.Pattern, Name: a.Name}
}

func aclPB(a auth.ACL) *pb.ACL {
	return &pb.ACL{Principal: a.Principal.String(), Permission: a.Permission.String(), Operation: a.Operation.String(),
		ResourceType: a.ResourceType.String(), Pattern: a.PatternType.String(), Name: a.Name}
}
