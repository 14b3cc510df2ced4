package server

import (
	"cmp"
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
	f, err := filterFromPB(a)
	if err != nil {
		return auth.ACL{}, err
	}
	acl := auth.ACL(f)
	return acl, acl.Validate()
}

var errMissingACL = errors.New("no ACL given")

// filterFromPB reads an ACL filter: unset fields match anything. The
// error is the first field's that does not parse.
func filterFromPB(a *pb.ACL) (auth.ACLFilter, error) {
	var f auth.ACLFilter
	if a == nil {
		return f, nil
	}
	f.Name = a.Name
	return f, cmp.Or(
		parseSet(a.Principal, auth.ParsePrincipal, &f.Principal),
		parseSet(a.Permission, auth.ParsePermission, &f.Permission),
		parseSet(a.Operation, auth.ParseOperation, &f.Operation),
		parseSet(a.ResourceType, auth.ParseResourceType, &f.ResourceType),
		parseSet(a.Pattern, auth.ParsePatternType, &f.PatternType))
}

// parseSet sets *dst to s parsed, unless s is empty (unset).
func parseSet[T any](s string, parse func(string) (T, error), dst *T) error {
	if s == "" {
		return nil
	}
	v, err := parse(s)
	*dst = v
	return err
}

func aclPB(a auth.ACL) *pb.ACL {
	return &pb.ACL{Principal: a.Principal.String(), Permission: a.Permission.String(), Operation: a.Operation.String(),
		ResourceType: a.ResourceType.String(), Pattern: a.PatternType.String(), Name: a.Name}
}
