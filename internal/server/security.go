package server

import (
	"context"

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
	if err := x.s.b.Forward().CreateUser(ctx, principal(ctx), req.Name, req.Password, req.Replace); err != nil {
		return nil, toStatus(err)
	}
	return &pb.CreateUserResponse{}, nil
}

func (x *securityServer) DeleteUser(ctx context.Context, req *pb.DeleteUserRequest) (*pb.DeleteUserResponse, error) {
	if err := x.s.b.Forward().DeleteUser(ctx, principal(ctx), req.Name); err != nil {
		return nil, toStatus(err)
	}
	return &pb.DeleteUserResponse{}, nil
}

func (x *securityServer) ListUsers(ctx context.Context, req *pb.ListUsersRequest) (*pb.ListUsersResponse, error) {
	names, err := x.s.b.Users(ctx, principal(ctx))
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ListUsersResponse{Names: names}, nil
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
	if err := x.s.b.Forward().AddACLs(ctx, principal(ctx), acls...); err != nil {
		return nil, toStatus(err)
	}
	return &pb.AddACLsResponse{}, nil
}

func (x *securityServer) RemoveACLs(ctx context.Context, req *pb.RemoveACLsRequest) (*pb.RemoveACLsResponse, error) {
	f, err := filterFromPB(req.Filter)
	if err != nil {
		return nil, invalidArg("ACL filter: %v", err)
	}
	removed, err := x.s.b.Forward().RemoveACLs(ctx, principal(ctx), f)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.RemoveACLsResponse{Removed: aclsPB(removed)}, nil
}

func (x *securityServer) ListACLs(ctx context.Context, req *pb.ListACLsRequest) (*pb.ListACLsResponse, error) {
	f, err := filterFromPB(req.Filter)
	if err != nil {
		return nil, invalidArg("ACL filter: %v", err)
	}
	acls, err := x.s.b.ListACLs(ctx, principal(ctx), f)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ListACLsResponse{Acls: aclsPB(acls)}, nil
}

// aclFromPB reads a whole ACL (every field set).
func aclFromPB(a *pb.ACL) (auth.ACL, error) {
	if a == nil {
		return auth.ACL{}, errMissingACL
	}
	f, err := filterFromPB(a)
	if err != nil {
		return auth.ACL{}, err
	}
	acl := auth.ACL(f)
	return acl, acl.Validate()
}

type aclError string

func (e aclError) Error() string { return string(e) }

const errMissingACL = aclError("no ACL given")

// filterFromPB reads an ACL filter: unset fields match anything.
func filterFromPB(a *pb.ACL) (auth.ACLFilter, error) {
	var f auth.ACLFilter
	if a == nil {
		return f, nil
	}
	var err error
	if a.Principal != "" {
		if f.Principal, err = auth.ParsePrincipal(a.Principal); err != nil {
			return f, err
		}
	}
	if a.Permission != "" {
		if f.Permission, err = auth.ParsePermission(a.Permission); err != nil {
			return f, err
		}
	}
	if a.Operation != "" {
		if f.Operation, err = auth.ParseOperation(a.Operation); err != nil {
			return f, err
		}
	}
	if a.ResourceType != "" {
		if f.ResourceType, err = auth.ParseResourceType(a.ResourceType); err != nil {
			return f, err
		}
	}
	if a.Pattern != "" {
		if f.PatternType, err = auth.ParsePatternType(a.Pattern); err != nil {
			return f, err
		}
	}
	f.Name = a.Name
	return f, nil
}

func aclsPB(acls []auth.ACL) []*pb.ACL {
	out := make([]*pb.ACL, len(acls))
	for i, a := range acls {
		out[i] = &pb.ACL{Principal: a.Principal.String(), Permission: a.Permission.String(), Operation: a.Operation.String(),
			ResourceType: a.ResourceType.String(), Pattern: a.PatternType.String(), Name: a.Name}
	}
	return out
}
