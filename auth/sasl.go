package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/xdg-go/scram"
)

// errEmptyUser refuses a SCRAM first message without a user name.
var errEmptyUser = errors.New("the first message names no user")

// MaxSASLMessage bounds one client SASL message; SCRAM's are under 1 KiB.
const MaxSASLMessage = 16 << 10

// SASLExchange is one SASL authentication in progress on one connection:
// the Kafka front-end feeds it each SaslAuthenticate's bytes, and answers
// with what Step returns, until Done. It is not safe for concurrent use (a
// connection's requests are sequential).
type SASLExchange struct {
	a         *Authenticator
	mechanism Mechanism
	conv      *scram.ServerConversation
	user      string
	cred      ScramCredential // what step one answered with
	known     bool            // cred is the user's, not a decoy
	done      bool
	principal Principal
	first     *scramFirst // the first round, once answered (scram_legacy.go)
}

// Start begins an exchange with mechanism m, as chosen by the client (Kafka
// SaslHandshake). PLAIN is refused on a connection without TLS.
func (a *Authenticator) Start(m Mechanism, overTLS bool) (*SASLExchange, error) {
	x := &SASLExchange{a: a, mechanism: m}
	switch m {
	case Plain:
		if !overTLS {
			return nil, fmt.Errorf("%w: PLAIN only over TLS (it sends the password itself)", ErrMechanism)
		}
		return x, nil
	case ScramSHA256, ScramSHA512:
		h, _, _ := m.scramHash()
		srv, err := h.NewServer(x.lookup)
		if err != nil {
			return nil, err
		}
		if a.nonce != nil {
			srv = srv.WithNonceGenerator(a.nonce)
		}
		x.conv = srv.NewConversation()
		return x, nil
	}
	return nil, fmt.Errorf("%w %q", ErrMechanism, m)
}

// lookup answers the library's credential lookup: the user's credential, or
// a decoy, so that an unknown user fails at the proof like a wrong password
// instead of at the first message. An empty user name is refused at once:
// no user has it, so the refusal tells nothing about who exists.
func (x *SASLExchange) lookup(user string) (scram.StoredCredentials, error) {
	x.user = user
	if user == "" {
		return scram.StoredCredentials{}, errEmptyUser
	}
	x.cred, x.known = x.a.decoy(x.mechanism, user), false
	if creds, err := x.a.store.Lookup(user); err == nil {
		if sc, ok := creds.For(x.mechanism); ok {
			x.cred, x.known = sc, true
		}
	}
	return x.cred.library(), nil
}

// Step consumes the client's next message and returns the server's answer.
// Any failure ends the exchange with an *AuthenticationError (send it, then
// close the connection, as Kafka does). After the last step Done is true and
// Principal names the user.
func (x *SASLExchange) Step(ctx context.Context, msg []byte) ([]byte, error) {
	if x.done {
		return nil, x.fail(errors.New("step after the exchange ended"))
	}
	if len(msg) > MaxSASLMessage {
		return nil, x.fail(fmt.Errorf("message of %d bytes", len(msg)))
	}
	if x.mechanism == Plain {
		return x.stepPlain(ctx, msg)
	}
	if x.isLegacyFinal(string(msg)) {
		return x.stepLegacyFinal(string(msg))
	}
	resp, err := x.conv.Step(string(msg))
	if err != nil {
		return nil, x.fail(err)
	}
	if authz := x.conv.AuthzID(); authz != "" && authz != x.user {
		return nil, x.fail(fmt.Errorf("authorization identity %q is not the user", authz))
	}
	if !x.conv.Done() {
		if x.first == nil {
			x.recordFirst(string(msg), resp)
		}
		return []byte(resp), nil
	}
	if !x.conv.Valid() || !x.known {
		return nil, x.fail(errors.New("invalid proof"))
	}
	// The user may have been deleted or its password changed since step
	// one: look again, so a deleted user cannot finish a login.
	if !x.stillCurrent() {
		return nil, x.fail(errors.New("credential changed or deleted during the exchange"))
	}
	x.done, x.principal = true, User(x.user)
	return []byte(resp), nil
}

func (x *SASLExchange) stepPlain(ctx context.Context, msg []byte) ([]byte, error) {
	user, password, err := ParsePlain(msg)
	x.user = user
	if err != nil {
		return nil, x.fail(err)
	}
	p, err := x.a.CheckPassword(ctx, user, password)
	x.done = true
	if err != nil {
		return nil, err
	}
	x.principal = p
	return nil, nil
}

func (x *SASLExchange) stillCurrent() bool {
	creds, err := x.a.store.Lookup(x.user)
	if err != nil {
		return false
	}
	sc, ok := creds.For(x.mechanism)
	return ok && bytes.Equal(sc.StoredKey, x.cred.StoredKey) && bytes.Equal(sc.Salt, x.cred.Salt)
}

func (x *SASLExchange) fail(reason error) error {
	x.done, x.principal = true, Principal{}
	return &AuthenticationError{Mechanism: x.mechanism, User: x.user, reason: reason}
}

// Done reports whether the exchange has ended, in success or failure.
func (x *SASLExchange) Done() bool { return x.done }

// Principal is the authenticated user once the exchange succeeded; ok is
// false before that and after a failure.
func (x *SASLExchange) Principal() (p Principal, ok bool) {
	return x.principal, !x.principal.IsZero()
}

// Mechanism is the exchange's mechanism.
func (x *SASLExchange) Mechanism() Mechanism { return x.mechanism }
