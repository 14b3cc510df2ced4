package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// The API keys a connection may use before it is authenticated.
const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// errNotAuthenticated closes a connection that sends a request other than
// ApiVersions, SaslHandshake or SaslAuthenticate before it has
// authenticated under --auth required (Kafka closes it too).
var errNotAuthenticated = errors.New("kafka: request before authentication")

// session is a connection's security state, touched only by its reader
// goroutine (the handlers that read principal run after it is set, see
// startSASL). Its states:
//
//	open ──SaslHandshake──▶ exchanging ──SaslAuthenticate…──▶ authenticated
//	  │                          │ (failure: answer, then close)
//	  └─ any other API: served as identified at accept (refused, closing
//	     the connection, while unauthenticated under --auth required)
//
// A connection is identified when it opens, from its TLS client
// certificate (Gate.Identify): under --auth none or optional, or with a
// verified certificate, it is admitted at once. A SASL login replaces that
// identity (the SASL user wins over a certificate, as in Kafka); it is
// allowed once per connection, and only before any other request than
// ApiVersions, so no request ever runs under two identities.
type session struct {
	tls      *tls.ConnectionState // nil: plaintext
	admitted bool                 // id is decided: requests may run
	id       auth.Identity
	x        *auth.SASLExchange // the exchange SaslHandshake began
	legacy   bool               // SaslHandshake v0: raw SASL tokens follow
	sasled   bool               // a SASL login completed
	served   bool               // an API other than ApiVersions or SASL ran
}

// handshakeTLS completes a TLS connection's handshake, under
// Config.HandshakeTimeout, before the first request is read.
func (c *conn) handshakeTLS() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	st := tc.ConnectionState()
	c.sess.tls = &st
	return nil
}

// identify decides the connection's identity from its certificate and the
// SASL user (zero without one). Under --auth required a connection with
// neither stays unadmitted: only SASL may follow.
func (c *conn) identify(sasl auth.Principal) error {
	id, err := c.s.cfg.Gate.Identify(c.ctx, auth.Presented{TLS: c.sess.tls, SASL: sasl, Addr: c.nc.RemoteAddr().String()})
	if err != nil {
		return err
	}
	c.sess.id, c.sess.admitted = id, true
	c.principal = brokerPrincipal(id.Principal)
	c.rctx = auth.NewContext(c.ctx, id)
	return nil
}

// brokerPrincipal is the core's form of a principal: "User:alice", and ""
// for an anonymous connection.
func brokerPrincipal(p auth.Principal) Principal {
	if p.IsZero() || p == auth.Anonymous {
		return ""
	}
	return Principal(p.String())
}

// admit decides whether a request may run: ApiVersions and SASL always;
// anything else only on an admitted connection. It also records that the
// connection has served a request, after which SASL is refused.
func (c *conn) admit(h header) error {
	switch h.key {
	case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
		return nil
	}
	if !c.sess.admitted {
		return fmt.Errorf("%w: %s before SaslHandshake and SaslAuthenticate (this listener requires authentication: configure the client's SASL mechanism and user, or a client certificate)",
			errNotAuthenticated, kmsg.NameForKey(h.key))
	}
	c.sess.served = true
	return nil
}

// mechanisms are the SASL mechanisms this connection may use.
func (c *conn) mechanisms() []string {
	a := c.s.cfg.Gate.Authenticator
	if a == nil {
		return []string{}
	}
	var out []string
	for _, m := range a.Mechanisms(c.sess.tls != nil) {
		out = append(out, string(m))
	}
	return out
}

// startSASL is SaslHandshake: it begins an exchange with the mechanism the
// client chose. legacy (v0) means the exchange's tokens follow as bare
// frames instead of SaslAuthenticate requests. A refusal returns the error
// code to answer and the reason to close the connection with.
func (c *conn) startSASL(mechanism string, legacy bool) (int16, error) {
	a := c.s.cfg.Gate.Authenticator
	switch {
	case c.sess.x != nil || c.sess.sasled:
		return kerr.IllegalSaslState.Code, errors.New("kafka: a second SaslHandshake on one connection")
	case c.sess.served:
		return kerr.IllegalSaslState.Code, errors.New("kafka: SaslHandshake after other requests (authenticate first)")
	case a == nil:
		return kerr.UnsupportedSaslMechanism.Code, errors.New("kafka: SASL is not enabled on this node (no users: --auth none)")
	}
	m, err := auth.ParseMechanism(mechanism)
	if err != nil {
		return kerr.UnsupportedSaslMechanism.Code, err
	}
	x, err := a.Start(m, c.sess.tls != nil)
	if err != nil {
		// PLAIN over plaintext is refused here, before the client sends
		// its password.
		return kerr.UnsupportedSaslMechanism.Code, fmt.Errorf("%w: use SCRAM-SHA-256 or SCRAM-SHA-512, or connect over TLS (security.protocol=SASL_SSL)", err)
	}
	c.sess.x, c.sess.legacy = x, legacy
	return 0, nil
}

// stepSASL feeds one client message of the exchange to the Authenticator
// and returns the answer. When the exchange completes, the connection is
// identified as the user. Any error ends the connection after its answer.
func (c *conn) stepSASL(msg []byte) ([]byte, error) {
	x := c.sess.x
	if x == nil {
		return nil, errors.New("kafka: SaslAuthenticate without a SaslHandshake first")
	}
	out, err := x.Step(c.ctx, msg)
	if err != nil {
		c.sess.x = nil
		return nil, err
	}
	if !x.Done() {
		return out, nil
	}
	c.sess.x, c.sess.sasled = nil, true
	p, _ := x.Principal()
	if err := c.identify(p); err != nil {
		return nil, err
	}
	c.log.Debug("kafka SASL authenticated", "principal", p.String(), "mechanism", x.Mechanism())
	return out, nil
}
