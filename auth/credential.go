package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"fmt"

	"github.com/xdg-go/scram"
)

// Mechanism is a SASL mechanism logd offers.
type Mechanism string

const (
	ScramSHA256 Mechanism = "SCRAM-SHA-256"
	ScramSHA512 Mechanism = "SCRAM-SHA-512"
	// Plain sends the password itself; offered only over TLS, checked
	// against the same SCRAM credentials.
	Plain Mechanism = "PLAIN"
)

// ScramMechanisms are the mechanisms a user's credentials are made for.
var ScramMechanisms = []Mechanism{ScramSHA256, ScramSHA512}

// ParseMechanism reads a SASL mechanism name (as Kafka clients send it).
func ParseMechanism(s string) (Mechanism, error) {
	switch m := Mechanism(s); m {
	case ScramSHA256, ScramSHA512, Plain:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: want SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN", ErrMechanism, s)
}

// scramHash is the hash of a SCRAM mechanism and its output size, the size
// of StoredKey and ServerKey.
func (m Mechanism) scramHash() (h scram.HashGeneratorFcn, size int, ok bool) {
	switch m {
	case ScramSHA256:
		return scram.SHA256, 32, true
	case ScramSHA512:
		return scram.SHA512, 64, true
	}
	return nil, 0, false
}

const (
	// DefaultIterations is the PBKDF2 iteration count of new credentials:
	// Kafka's default, and RFC 7677's minimum.
	DefaultIterations = 4096
	// MinIterations is the least a credential may use: clients (xdg-go,
	// librdkafka, Java) refuse fewer.
	MinIterations = 4096
	// MaxIterations bounds the work one PLAIN login costs the server.
	MaxIterations = 1 << 20
	saltBytes     = 32
	// maxPasswordBytes bounds what one PLAIN login makes the server hash.
	maxPasswordBytes = 1024
)

// ScramCredential is what the server keeps of a password for one SCRAM
// mechanism (RFC 5802): enough to check a proof, never enough to log in.
type ScramCredential struct {
	Mechanism  Mechanism
	Salt       []byte
	Iterations int
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// Credentials are one user's stored credentials, one per SCRAM mechanism.
type Credentials struct {
	Scram []ScramCredential
}

// NewCredentials derives credentials for every SCRAM mechanism from a
// password, each with its own random salt. The password is used as given
// (not SASLprep-normalized), as Kafka's brokers and clients do, so a
// password that is not plain ASCII works from Kafka clients.
func NewCredentials(password string, iterations int) (Credentials, error) {
	if password == "" || len(password) > maxPasswordBytes {
		return Credentials{}, fmt.Errorf("%w: password must be 1 to %d bytes", ErrInvalid, maxPasswordBytes)
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return Credentials{}, fmt.Errorf("%w: %d iterations: want %d to %d", ErrInvalid, iterations, MinIterations, MaxIterations)
	}
	var c Credentials
	for _, m := range ScramMechanisms {
		salt := make([]byte, saltBytes)
		if _, err := rand.Read(salt); err != nil {
			return Credentials{}, err
		}
		sc, err := deriveCredential(m, password, salt, iterations)
		if err != nil {
			return Credentials{}, err
		}
		c.Scram = append(c.Scram, sc)
	}
	return c, nil
}

// deriveCredential is the one place a password becomes a SCRAM credential,
// through the library's client (the same derivation a client makes).
func deriveCredential(m Mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h, _, ok := m.scramHash()
	if !ok {
		return ScramCredential{}, fmt.Errorf("%w %q for a credential", ErrMechanism, m)
	}
	// The user name plays no part in the stored values; the library's
	// constructor wants one.
	cl, err := h.NewClientUnprepped("-", password, "")
	if err != nil {
		return ScramCredential{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	sc, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return ScramCredential{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return ScramCredential{Mechanism: m, Salt: salt, Iterations: iterations, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// For is the credential for mechanism m.
func (c Credentials) For(m Mechanism) (ScramCredential, bool) {
	for _, sc := range c.Scram {
		if sc.Mechanism == m {
			return sc, true
		}
	}
	return ScramCredential{}, false
}

// matches reports whether password is the one sc was made from, comparing
// in constant time. It costs Iterations rounds of HMAC: callers bound how
// many run at once.
func (sc ScramCredential) matches(password string) bool {
	if password == "" || len(password) > maxPasswordBytes {
		return false
	}
	d, err := deriveCredential(sc.Mechanism, password, sc.Salt, sc.Iterations)
	return err == nil && hmac.Equal(d.StoredKey, sc.StoredKey)
}

func (sc ScramCredential) library() scram.StoredCredentials {
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(sc.Salt), Iters: sc.Iterations},
		StoredKey:  sc.StoredKey,
		ServerKey:  sc.ServerKey,
	}
}
