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
// authorizes. A call is always its caller's own (see the package doc).

// authorizationKey carries "Basic base64(user:password)".
const authorizationKey = "authorization"

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
	if _, err := s.b.Gate().Identify(ctx, presented(ctx, "")); err != nil {
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
	id, err := s.b.Gate().Identify(ctx, presented(ctx, first(md, authorizationKey)))
	if err != nil {
		return ctx, authStatus(err)
	}
	return auth.NewContext(ctx, id), nil
}

// presented is what the call's connection presents (its address, its
// verified client certificate), with the authorization metadata.
func presented(ctx context.Context, authorization string) auth.Presented {
	pr := auth.Presented{Authorization: authorization}
	if p, ok := peer.FromContext(ctx); ok {
		pr.Addr = p.Addr.String()
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			pr.TLS = &ti.State
		}
	}
	return pr
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// authStatus maps an authentication failure.
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
