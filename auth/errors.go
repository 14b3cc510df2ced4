package auth

import "errors"

// Sentinel errors. Functions wrap them with %w and the value that was wrong,
// so a caller tests with errors.Is and a user reads what to fix.
var (
	// ErrInvalid is a bad principal, operation, resource type, mode or ACL.
	ErrInvalid = errors.New("auth: invalid value")
	// ErrCorrupt is stored credentials or an ACL that do not decode.
	ErrCorrupt = errors.New("auth: corrupt encoding")
	// ErrUnknownUser is a user with no stored credentials. The Authenticator
	// never shows it to a client (see ErrAuthenticationFailed).
	ErrUnknownUser = errors.New("auth: unknown user")
	// ErrAuthenticationFailed is a login that did not prove the user: wrong
	// password, unknown or deleted user, bad proof, malformed message.
	ErrAuthenticationFailed = errors.New("auth: authentication failed")
	// ErrUnauthenticated is a connection without credentials under
	// --auth required.
	ErrUnauthenticated = errors.New("auth: authentication required")
	// ErrPlaintextCredentials is a password sent on a connection without
	// TLS: refused, since anyone on the path could read it.
	ErrPlaintextCredentials = errors.New("auth: a password is accepted over TLS only")
	// ErrMechanism is a SASL mechanism logd does not offer, or PLAIN
	// offered over a connection without TLS.
	ErrMechanism = errors.New("auth: unsupported SASL mechanism")
	// ErrDenied is a request the ACLs refuse; the error is a *DeniedError.
	ErrDenied = errors.New("auth: permission denied")
)
