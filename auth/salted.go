package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
)

// SaltedCredential is the credential of a password a client salted and
// hashed itself (Kafka's AlterUserScramCredentials sends the salt, the
// iteration count and SaltedPassword = PBKDF2(password, salt, iterations),
// never the password): StoredKey = H(HMAC(SaltedPassword, "Client Key")),
// ServerKey = HMAC(SaltedPassword, "Server Key"), as RFC 5802 derives
// them. The iteration count must be one NewCredentials accepts.
func SaltedCredential(m Mechanism, salt, saltedPassword []byte, iterations int) (ScramCredential, error) {
	var h func() hash.Hash
	switch m {
	case ScramSHA256:
		h = sha256.New
	case ScramSHA512:
		h = sha512.New
	default:
		return ScramCredential{}, fmt.Errorf("%w %q for a credential", ErrMechanism, m)
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return ScramCredential{}, fmt.Errorf("%w: %d iterations: want %d to %d", ErrInvalid, iterations, MinIterations, MaxIterations)
	}
	if len(salt) == 0 || len(saltedPassword) != h().Size() {
		return ScramCredential{}, fmt.Errorf("%w: %s wants a salt and a %d-byte salted password, got %d salt bytes and %d", ErrInvalid, m, h().Size(), len(salt), len(saltedPassword))
	}
	mac := func(msg string) []byte {
		m := hmac.New(h, saltedPassword)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	stored := h()
	stored.Write(mac("Client Key"))
	return ScramCredential{Mechanism: m, Salt: append([]byte(nil), salt...), Iterations: iterations,
		StoredKey: stored.Sum(nil), ServerKey: mac("Server Key")}, nil
}
