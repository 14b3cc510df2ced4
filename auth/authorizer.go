package auth

import (
	"context"
	"fmt"
)

// Identity is who sent a request and from where: what a front-end learned
// when it authenticated the connection, carried to the core in the
// request's context.
type Identity struct {
	Principal Principal
	// Addr is the client's address (host:port), for the audit log.
	Addr string
}

type identityKey struct{}

// NewContext returns ctx carrying id; a front-end calls it once per
// request, after authentication and AuthMode.Admit.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom is the identity a front-end put in ctx. A context without
// one is Anonymous, so a path that forgot to attach it is refused under
// --authz on rather than trusted.
func IdentityFrom(ctx context.Context) Identity {
	if id, ok := ctx.Value(identityKey{}).(Identity); ok && !id.Principal.IsZero() {
		return id
	}
	return Identity{Principal: Anonymous}
}

// DeniedError is a request the ACLs refuse. Its message names the principal,
// the operation and the resource (what gRPC's PERMISSION_DENIED carries); a
// Kafka front-end picks TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED by
// Resource.Type. It does not say whether a deny ACL or a missing allow was
// the cause: that is for the operator's audit log.
type DeniedError struct {
	Principal Principal
	Operation Operation
	Resource  Resource
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("auth: %s may not %s %s (ask an administrator for an ACL: logd acl add)", e.Principal, e.Operation, e.Resource)
}

// Unwrap makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Unwrap() error { return ErrDenied }

// AuthorizerConfig configures an Authorizer.
type AuthorizerConfig struct {
	Mode AuthzMode
	// SuperUsers are allowed everything, whatever the ACLs say (deny ACLs
	// included), as in Kafka's super.users.
	SuperUsers []Principal
	ACLs       ACLSource
	// Audit records denials; nil records nothing.
	Audit *DenialAudit
}

// Authorizer is the one authorization point: the core asks it before every
// produce, fetch, commit, topic, group or cluster operation, whichever
// front-end the request came through.
type Authorizer struct {
	mode  AuthzMode
	super map[Principal]bool
	acls  ACLSource
	audit *DenialAudit
}

// NewAuthorizer builds an Authorizer. With --authz on it needs ACLs.
func NewAuthorizer(c AuthorizerConfig) (*Authorizer, error) {
	if c.Mode == AuthzOn && c.ACLs == nil {
		return nil, fmt.Errorf("%w: --authz on without an ACL store", ErrInvalid)
	}
	a := &Authorizer{mode: c.Mode, super: map[Principal]bool{}, acls: c.ACLs, audit: c.Audit}
	for _, p := range c.SuperUsers {
		a.super[p] = true
	}
	return a, nil
}

// Authorize returns nil when id may do op on r, and a *DeniedError (which
// the audit records) when it may not. op is never OpAll: a request asks for
// one operation.
func (a *Authorizer) Authorize(id Identity, op Operation, r Resource) error {
	if id.Principal.IsZero() {
		id.Principal = Anonymous // no one proved anything: the same as IdentityFrom
	}
	d := a.decide(id.Principal, op, r)
	if d == Allowed {
		return nil
	}
	if a.audit != nil {
		a.audit.record(id, op, r, d)
	}
	return &DeniedError{Principal: id.Principal, Operation: op, Resource: r}
}

// AuthorizeContext is Authorize for the identity in ctx (see IdentityFrom).
func (a *Authorizer) AuthorizeContext(ctx context.Context, op Operation, r Resource) error {
	return a.Authorize(IdentityFrom(ctx), op, r)
}

// Allowed reports whether p may do op on r, without auditing: for
// filtering listings (Metadata, topic and group lists show only what the
// principal may describe), where a hidden entry is not a refused request.
func (a *Authorizer) Allowed(p Principal, op Operation, r Resource) bool {
	return a.decide(p, op, r) == Allowed
}

func (a *Authorizer) decide(p Principal, op Operation, r Resource) Decision {
	switch {
	case a.mode == AuthzOff:
		return Allowed
	case op == OpAll:
		return NoMatch
	case p.IsZero():
		p = Anonymous
	case a.super[p]:
		return Allowed
	}
	return a.acls.Index().Decide(p, op, r)
}
