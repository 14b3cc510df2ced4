package client

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// WithCredentials authenticates every call as user with password: they
// travel in the "authorization" metadata (Basic), over TLS only. Dial
// fails without WithTLS, as the node refuses a password sent in
// plaintext. A node checks them against its users (`logd user create`);
// wrong ones fail with ErrUnauthenticated.
func WithCredentials(user, password string) Option {
	return func(o *options) { o.creds = &basicCreds{user: user, password: password} }
}

var errCredentialsWithoutTLS = errors.New("client: WithCredentials needs WithTLS: a password is sent over TLS only")

// basicCreds are grpc per-RPC credentials that require TLS.
type basicCreds struct{ user, password string }

func (b *basicCreds) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	tok := base64.StdEncoding.EncodeToString([]byte(b.user + ":" + b.password))
	return map[string]string{"authorization": "Basic " + tok}, nil
}

func (b *basicCreds) RequireTransportSecurity() bool { return true }

// ACL is one access rule (docs/security.md): Principal ("User:alice", or
// "User:*" for everyone) is allowed or denied (Permission "allow" or
// "deny") Operation (read, write, create, delete, alter, describe, all)
// on the resources of ResourceType (topic, group, cluster) whose name
// matches Name by Pattern ("literal", where "*" is every name, or
// "prefixed"). As a filter (RemoveACLs, ListACLs) empty fields match
// anything.
type ACL struct {
	Principal    string
	Permission   string
	Operation    string
	ResourceType string
	Pattern      string
	Name         string
}

func (a ACL) String() string {
	return fmt.Sprintf("%s %s %s on %s %s:%s", a.Principal, a.Permission, a.Operation, a.ResourceType, a.Pattern, a.Name)
}

func (a ACL) pb() *logdv1.ACL {
	return &logdv1.ACL{Principal: a.Principal, Permission: a.Permission, Operation: a.Operation,
		ResourceType: strings.ToLower(a.ResourceType), Pattern: a.Pattern, Name: a.Name}
}

func aclsFromPB(in []*logdv1.ACL) []ACL {
	out := make([]ACL, len(in))
	for i, a := range in {
		out[i] = ACL{Principal: a.GetPrincipal(), Permission: a.GetPermission(), Operation: a.GetOperation(),
			ResourceType: a.GetResourceType(), Pattern: a.GetPattern(), Name: a.GetName()}
	}
	return out
}

func (a *Admin) securityCall(ctx context.Context, fn func(ctx context.Context, sc logdv1.SecurityClient) error) error {
	return a.c.unary(ctx, func(ctx context.Context, cc *grpc.ClientConn) error {
		return fn(ctx, logdv1.NewSecurityClient(cc))
	})
}

// CreateUser creates a user that logs in with password (the node stores
// SCRAM credentials, never the password). An existing user is
// ErrUserExists unless replace, which changes its password. Needs alter on
// the cluster.
func (a *Admin) CreateUser(ctx context.Context, name, password string, replace bool) error {
	return a.securityCall(ctx, func(ctx context.Context, sc logdv1.SecurityClient) error {
		_, err := sc.CreateUser(ctx, &logdv1.CreateUserRequest{Name: name, Password: password, Replace: replace})
		return err
	})
}

// DeleteUser deletes a user (ErrUserNotFound when there is none).
func (a *Admin) DeleteUser(ctx context.Context, name string) error {
	return a.securityCall(ctx, func(ctx context.Context, sc logdv1.SecurityClient) error {
		_, err := sc.DeleteUser(ctx, &logdv1.DeleteUserRequest{Name: name})
		return err
	})
}

// ListUsers lists the user names, sorted. Needs describe on the cluster.
func (a *Admin) ListUsers(ctx context.Context) ([]string, error) {
	var names []string
	err := a.securityCall(ctx, func(ctx context.Context, sc logdv1.SecurityClient) error {
		resp, err := sc.ListUsers(ctx, &logdv1.ListUsersRequest{})
		names = resp.GetNames()
		return err
	})
	return names, err
}

// AddACLs adds ACLs, all or none (adding one that exists is no error).
// Needs alter on the cluster.
func (a *Admin) AddACLs(ctx context.Context, acls ...ACL) error {
	req := &logdv1.AddACLsRequest{}
	for _, acl := range acls {
		req.Acls = append(req.Acls, acl.pb())
	}
	return a.securityCall(ctx, func(ctx context.Context, sc logdv1.SecurityClient) error {
		_, err := sc.AddACLs(ctx, req)
		return err
	})
}

// RemoveACLs removes every ACL the filter matches and returns them.
func (a *Admin) RemoveACLs(ctx context.Context, filter ACL) ([]ACL, error) {
	var out []ACL
	err := a.securityCall(ctx, func(ctx context.Context, sc logdv1.SecurityClient) error {
		resp, err := sc.RemoveACLs(ctx, &logdv1.RemoveACLsRequest{Filter: filter.pb()})
		out = aclsFromPB(resp.GetRemoved())
		return err
	})
	return out, err
}

// ListACLs returns the ACLs the filter matches, sorted. Needs describe on
// the cluster.
func (a *Admin) ListACLs(ctx context.Context, filter ACL) ([]ACL, error) {
	var out []ACL
	err := a.securityCall(ctx, func(ctx context.Context, sc logdv1.SecurityClient) error {
		resp, err := sc.ListACLs(ctx, &logdv1.ListACLsRequest{Filter: filter.pb()})
		out = aclsFromPB(resp.GetAcls())
		return err
	})
	return out, err
}
