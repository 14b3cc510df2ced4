package auth

import (
	"context"
	"crypto/tls"
	"fmt"
)

// Presented is what one request, or the connection it came on, presents
// to prove who it is. A front-end fills in what it has.
type Presented struct {
	// TLS is the connection's state; nil on a plaintext connection.
	TLS *tls.ConnectionState
	// SASL is the principal of the connection's completed SASL exchange
	// (Kafka); zero without one.
	SASL Principal
	// Authorization is the request's "authorization" metadata or header
	// (gRPC, HTTP): "Basic base64(user:password)", or empty.
	Authorization string
	// Addr is the client's address, for the audit log.
	Addr string
}

// Gate is a front-end's authentication policy: --auth, and the
// Authenticator that checks passwords. The gRPC, Kafka and HTTP front-ends
// each call Identify once per request (Kafka: once per connection, after
// SASL), so the rules below exist once.
type Gate struct {
	Mode          AuthMode
	Authenticator *Authenticator // needed unless Mode is AuthNone
}

// Identify decides the identity of a request, to be attached with
// NewContext. The principal is, in order: the SASL user (Kafka's rule: it
// wins over a client certificate), the Basic credentials (refused without
// TLS, refused when wrong: never downgraded to Anonymous), the verified
// client certificate's CN; then Mode.Admit decides whether no principal is
// admitted as Anonymous. Under AuthNone nothing is checked.
func (g Gate) Identify(ctx context.Context, pr Presented) (Identity, error) {
	if g.Mode == AuthNone {
		return Identity{Principal: Anonymous, Addr: pr.Addr}, nil
	}
	var p Principal
	switch {
	case !pr.SASL.IsZero():
		p = pr.SASL
	case pr.Authorization != "":
		var err error
		if p, err = g.checkBasic(ctx, pr); err != nil {
			return Identity{}, err
		}
	case pr.TLS != nil:
		p, _ = CertificatePrincipal(*pr.TLS)
	}
	p, err := g.Mode.Admit(p)
	if err != nil {
		return Identity{}, err
	}
	return Identity{Principal: p, Addr: pr.Addr}, nil
}

func (g Gate) checkBasic(ctx context.Context, pr Presented) (Principal, error) {
	if pr.TLS == nil || !pr.TLS.HandshakeComplete {
		return Principal{}, ErrPlaintextCredentials
	}
	if g.Authenticator == nil {
		return Principal{}, fmt.Errorf("%w: no user store to check a password against", ErrAuthenticationFailed)
	}
	user, password, err := ParseBasicAuthorization(pr.Authorization)
	if err != nil {
		return Principal{}, err
	}
	return g.Authenticator.CheckPassword(ctx, user, password)
}
