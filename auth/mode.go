package auth

import (
	"fmt"
	"net"
	"strings"
)

// AuthMode is --auth: whether a connection must authenticate.
type AuthMode uint8

const (
	// AuthNone performs no authentication: every request is Anonymous. The
	// default, for a loopback single node; a node on another address with
	// it should warn loudly at start.
	AuthNone AuthMode = iota
	// AuthOptional uses credentials when the client presents them and
	// admits Anonymous otherwise. Presented credentials that fail are
	// refused, never downgraded to Anonymous.
	AuthOptional
	// AuthRequired refuses a connection that presents no credentials.
	AuthRequired
)

var authModeNames = []string{AuthNone: "none", AuthOptional: "optional", AuthRequired: "required"}

func (m AuthMode) String() string {
	if int(m) < len(authModeNames) {
		return authModeNames[m]
	}
	return fmt.Sprintf("AuthMode(%d)", uint8(m))
}

// ParseAuthMode reads --auth none|optional|required.
func ParseAuthMode(s string) (AuthMode, error) {
	for i, n := range authModeNames {
		if s == n {
			return AuthMode(i), nil
		}
	}
	return 0, fmt.Errorf("%w: --auth %q: want none, optional or required", ErrInvalid, s)
}

// Admit decides the principal of a request from what its connection
// proved: p is the principal of a verified certificate or a completed
// login, or the zero Principal when the client presented nothing. A front-
// end that saw credentials fail returns ErrAuthenticationFailed itself and
// never calls Admit, so a wrong password cannot become Anonymous.
func (m AuthMode) Admit(p Principal) (Principal, error) {
	switch {
	case m == AuthNone:
		return Anonymous, nil
	case !p.IsZero():
		return p, nil
	case m == AuthRequired:
		return Principal{}, ErrUnauthenticated
	default:
		return Anonymous, nil
	}
}

// AuthzMode is --authz: whether ACLs are enforced.
type AuthzMode uint8

const (
	// AuthzOff allows every request (Authorize always returns nil).
	AuthzOff AuthzMode = iota
	// AuthzOn refuses every request no ACL allows.
	AuthzOn
)

func (m AuthzMode) String() string {
	switch m {
	case AuthzOff:
		return "off"
	case AuthzOn:
		return "on"
	}
	return fmt.Sprintf("AuthzMode(%d)", uint8(m))
}

// ParseAuthzMode reads --authz off|on.
func ParseAuthzMode(s string) (AuthzMode, error) {
	switch s {
	case "off":
		return AuthzOff, nil
	case "on":
		return AuthzOn, nil
	}
	return 0, fmt.Errorf("%w: --authz %q: want off or on", ErrInvalid, s)
}

// ParseSuperUsers reads --super-users "User:a,User:b": principals that every
// ACL check allows. Spaces around entries are ignored, an empty string is
// no super users; the wildcard User:* is refused (it would turn --authz off
// in a way nobody reading the flag would notice).
func ParseSuperUsers(s string) ([]Principal, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Principal
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		p, err := ParsePrincipal(f)
		if err != nil {
			return nil, fmt.Errorf("--super-users: %w", err)
		}
		if p == AnyUser {
			return nil, fmt.Errorf("%w: --super-users: %q would make everyone a super user; use --authz off", ErrInvalid, f)
		}
		out = append(out, p)
	}
	return out, nil
}

// NonLoopback returns the listen addresses (host:port) that other machines
// can reach: any host but a loopback IP or "localhost" (an empty host or
// 0.0.0.0 listens everywhere; a name is assumed reachable). The server
// warns loudly at start when it listens on one of them under AuthNone.
func NonLoopback(addrs ...string) []string {
	var out []string
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			host = a
		}
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			continue
		}
		out = append(out, a)
	}
	return out
}
