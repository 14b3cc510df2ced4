package auth

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
)

// maxPlainField is RFC 4616's bound on each PLAIN field.
const maxPlainField = 255

// ParsePlain reads a SASL PLAIN message (RFC 4616):
// [authzid] NUL authcid NUL passwd. As in Kafka, an authorization identity
// other than the user itself is refused: logd has no impersonation.
func ParsePlain(msg []byte) (user, password string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", fmt.Errorf("%w: PLAIN message has %d fields, want authzid NUL user NUL password", ErrAuthenticationFailed, len(parts))
	}
	authz, authc, pass := parts[0], parts[1], parts[2]
	switch {
	case len(authc) == 0 || len(pass) == 0:
		return "", "", fmt.Errorf("%w: PLAIN message without a user or password", ErrAuthenticationFailed)
	case len(authz) > maxPlainField || len(authc) > maxPlainField || len(pass) > maxPlainField:
		return "", "", fmt.Errorf("%w: PLAIN field over %d bytes", ErrAuthenticationFailed, maxPlainField)
	case len(authz) != 0 && !bytes.Equal(authz, authc):
		return "", "", fmt.Errorf("%w: PLAIN authorization identity differs from the user", ErrAuthenticationFailed)
	}
	return string(authc), string(pass), nil
}

// ParseBasicAuthorization reads an "authorization: Basic base64(user:pass)"
// header (RFC 7617), the form in which the gRPC and HTTP front-ends carry
// a user and password (over TLS only). The scheme is case-insensitive; the
// user may not contain a colon, the password may.
func ParseBasicAuthorization(header string) (user, password string, err error) {
	scheme, b64, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", fmt.Errorf("%w: authorization is not Basic", ErrAuthenticationFailed)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return "", "", fmt.Errorf("%w: Basic credentials are not base64", ErrAuthenticationFailed)
	}
	user, password, ok = strings.Cut(string(raw), ":")
	if !ok || user == "" || password == "" {
		return "", "", fmt.Errorf("%w: Basic credentials are not user:password", ErrAuthenticationFailed)
	}
	return user, password, nil
}
