package auth

import (
	"crypto/tls"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PrincipalTypeUser is the only principal type: Kafka's "User".
const PrincipalTypeUser = "User"

// maxNameBytes bounds principal and user names: a certificate CN is at most
// 64 characters (RFC 5280), a user name is typed by an operator.
const maxNameBytes = 256

// Principal is who a request is from, written Type:Name ("User:alice").
// The zero Principal is no one; Anonymous is a connection that did not
// authenticate.
type Principal struct {
	Type string
	Name string
}

// Anonymous is the principal of a connection without credentials (Kafka's
// User:ANONYMOUS). ACLs may name it like any other principal.
var Anonymous = Principal{Type: PrincipalTypeUser, Name: "ANONYMOUS"}

// AnyUser is the wildcard principal of an ACL: it matches every principal,
// Anonymous included.
var AnyUser = Principal{Type: PrincipalTypeUser, Name: "*"}

// User is the principal of a user name (from SASL, a password or a CN).
func User(name string) Principal { return Principal{Type: PrincipalTypeUser, Name: name} }

// String is the principal as written in ACLs and flags: "User:alice".
func (p Principal) String() string {
	if p.IsZero() {
		return ""
	}
	return p.Type + ":" + p.Name
}

// IsZero reports whether p is no one.
func (p Principal) IsZero() bool { return p == Principal{} }

// ParsePrincipal reads "User:NAME". The type is case-sensitive as in Kafka;
// the name is everything after the first colon and must be a valid name
// (ValidateName). "User:*" is the wildcard AnyUser.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok {
		return Principal{}, fmt.Errorf("%w: principal %q: want User:NAME", ErrInvalid, s)
	}
	if typ != PrincipalTypeUser {
		return Principal{}, fmt.Errorf("%w: principal %q: type %q is not supported, want User:NAME", ErrInvalid, s, typ)
	}
	if err := ValidateName(name); err != nil {
		return Principal{}, fmt.Errorf("%w: principal %q: %v", ErrInvalid, s, err)
	}
	return User(name), nil
}

// ValidateName checks a user or principal name: 1 to 256 bytes of UTF-8, no
// control characters, no surrounding spaces and no comma (lists of
// principals, such as --super-users, are comma separated). The error does
// not repeat the name, so a caller can include it without doubling it.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty name")
	case len(name) > maxNameBytes:
		return fmt.Errorf("name is %d bytes, at most %d", len(name), maxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("name is not valid UTF-8")
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("name starts or ends with a space")
	case strings.ContainsRune(name, ','):
		return fmt.Errorf("name contains a comma")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("name contains control character %U", r)
		}
	}
	return nil
}

// CertificatePrincipal is the principal of a TLS connection's client
// certificate, User:<CN>, when the chain was verified against the
// configured client CA. An unverified certificate (no client CA configured,
// or a handshake that did not verify) names no one: ok is false.
func CertificatePrincipal(cs tls.ConnectionState) (p Principal, ok bool) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return Principal{}, false
	}
	cn := cs.VerifiedChains[0][0].Subject.CommonName
	if ValidateUserName(cn) != nil {
		return Principal{}, false
	}
	return User(cn), true
}

// ValidateUserName checks the name of a user that can log in (a SCRAM user
// or a certificate CN): a valid name that is neither the wildcard "*" nor
// ANONYMOUS, so no login can pose as every principal or as no one.
func ValidateUserName(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if name == AnyUser.Name || name == Anonymous.Name {
		return fmt.Errorf("name %q is reserved", name)
	}
	return nil
}
