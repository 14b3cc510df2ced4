package server

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
)

// Authentication on the gRPC API (docs/security.md). Every call but the
// health service's is identified once, by an interceptor, through the
// broker's Gate: the verified client certificate (User:<CN>), or a user
// and password in the "authorization" metadata (Basic, over TLS only),
// then --auth. Handlers pass principal(ctx) to the broker, which
// authorizes.
//
// A node that forwards a request to another node (to the metadata leader,
// to a partition's leader) sends the original principal in
// forwardedPrincipalKey, and the original "authorization" metadata when
// the client sent one (the receiver then checks the password itself).
// The receiver honours the claim only from a caller allowed to alter the
// cluster (broker.ForwardedIdentity): the nodes' certificate principals,
// listed in --super-users. So a client cannot pose as another principal,
// and a denied principal stays denied when its request is forwarded.

const (
	// authorizationKey carries "Basic base64(user:password)".
	authorizationKey = "authorization"
	// forwardedPrincipalKey carries the original principal of a forwarded
	// request ("User:alice"; "User:ANONYMOUS" for anonymous).
	forwardedPrincipalKey = "logd-forwarded-principal"
)

// incoming is what a request presented, kept for forwarding it.
type incoming struct {
	id            auth.Identity
	authorization string
}

type incomingKey struct{}

// principal is the broker's principal of a request the interceptor
// identified.
func principal(ctx context.Context) broker.Principal {
	return broker.PrincipalOf(auth.IdentityFrom(ctx))
}

// authUnary identifies unary calls.
func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if skipAuth(info.FullMethod) {
		return h(ctx, req)
	}
	ctx, err := s.identify(ctx)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// authStream identifies streaming calls.
func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if skipAuth(info.FullMethod) {
		return h(srv, ss)
	}
	ctx, err := s.identify(ss.Context())
	if err != nil {
		return err
	}
	return h(srv, identifiedStream{ss, ctx})
}

// authTap refuses a call that presents no credentials at all where they
// are required (--auth required: no verified client certificate, no
// "authorization" metadata) as soon as its headers arrive, before gRPC
// reads its request message: a caller nobody knows cannot make the node
// buffer a message (up to --max-batch-bytes) per stream. It refuses only
// what the interceptor would, with the same status; a password is checked
// by the interceptor, not here (the tap runs on the connection's reading
// goroutine, and must be quick).
func (s *Server) authTap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if skipAuth(info.FullMethodName) || first(info.Header, authorizationKey) != "" {
		return ctx, nil
	}
	pr := auth.Presented{}
	if p, ok := peer.FromContext(ctx); ok {
		pr.Addr = p.Addr.String()
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			pr.TLS = &ti.State
		}
	}
	if _, err := s.b.Gate().Identify(ctx, pr); err != nil {
		return ctx, authStatus(err)
	}
	return ctx, nil
}

// skipAuth: the health service answers everyone, as /healthz does.
func skipAuth(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.Health/")
}

type identifiedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s identifiedStream) Context() context.Context { return s.ctx }

// identify decides the request's identity and attaches it to ctx, or
// answers UNAUTHENTICATED / PERMISSION_DENIED.
func (s *Server) identify(ctx context.Context) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	pr := auth.Presented{Authorization: first(md, authorizationKey)}
	if p, ok := peer.FromContext(ctx); ok {
		pr.Addr = p.Addr.String()
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			pr.TLS = &ti.State
		}
	}
	id, err := s.b.Gate().Identify(ctx, pr)
	if err != nil {
		return ctx, authStatus(err)
	}
	if claimed, ok := md[forwardedPrincipalKey]; ok && len(claimed) > 0 {
		if id, err = s.b.ForwardedIdentity(id, claimed[0]); err != nil {
			return ctx, authStatus(err)
		}
	}
	ctx = context.WithValue(ctx, incomingKey{}, incoming{id: id, authorization: pr.Authorization})
	return auth.NewContext(ctx, id), nil
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// authStatus maps an authentication or forwarding failure.
func authStatus(err error) error {
	var ae *auth.AuthenticationError
	switch {
	case errors.Is(err, auth.ErrDenied):
		return toStatus(err)
	case errors.As(err, &ae):
		return status.Error(codes.Unauthenticated, ae.Error())
	case errors.Is(err, auth.ErrPlaintextCredentials):
		return status.Error(codes.Unauthenticated, "a password is accepted over TLS only: connect with TLS (--tls-ca), or use a client certificate")
	case errors.Is(err, auth.ErrUnauthenticated):
		return status.Error(codes.Unauthenticated, "this node requires authentication (--auth required): present a client certificate, or a user and password (--user, LOGD_PASSWORD) over TLS")
	case errors.Is(err, auth.ErrAuthenticationFailed), errors.Is(err, auth.ErrInvalid):
		return status.Error(codes.Unauthenticated, err.Error())
	}
	return toStatus(err)
}

// forwardAuth adds to an outgoing call what the request it forwards
// presented: the original principal and its password credentials. A call
// the node makes on its own (a join, a status poll outside a request)
// carries nothing and is the node's own (its certificate's principal).
func forwardAuth(ctx context.Context) context.Context {
	in, ok := ctx.Value(incomingKey{}).(incoming)
	if !ok {
		return ctx
	}
	p := in.id.Principal
	if p.IsZero() {
		p = auth.Anonymous
	}
	kv := []string{forwardedPrincipalKey, p.String()}
	if in.authorization != "" {
		kv = append(kv, authorizationKey, in.authorization)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}
