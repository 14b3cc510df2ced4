package auth

import (
	"encoding/binary"
	"fmt"
)

// Stored credentials, version 1 (all integers big-endian):
//
//	offset size field
//	     0    1 version      1
//	     1    1 count        number of credentials that follow, 1 or 2
//	then count times, mechanisms distinct:
//	     0    1 mechanism    1: SCRAM-SHA-256, 2: SCRAM-SHA-512
//	     1    4 iterations   MinIterations .. MaxIterations
//	     5    1 salt length  S, 16 .. 255
//	     6    S salt
//	   6+S    K StoredKey    K = 32 (SHA-256) or 64 (SHA-512)
//	 6+S+K    K ServerKey
//
// Nothing follows the last credential. A later version adds a new version
// byte; this decoder refuses versions it does not know rather than guess.
const (
	credentialsVersion = 1
	minSaltBytes       = 16
)

var mechanismCodes = []Mechanism{1: ScramSHA256, 2: ScramSHA512}

func mechanismCode(m Mechanism) (byte, bool) {
	for i, n := range mechanismCodes {
		if n == m && m != "" {
			return byte(i), true
		}
	}
	return 0, false
}

// MarshalBinary encodes the credentials for storage (version 1).
func (c Credentials) MarshalBinary() ([]byte, error) {
	if len(c.Scram) == 0 || len(c.Scram) > len(ScramMechanisms) {
		return nil, fmt.Errorf("%w: %d credentials, want 1 to %d", ErrInvalid, len(c.Scram), len(ScramMechanisms))
	}
	b := []byte{credentialsVersion, byte(len(c.Scram))}
	for _, sc := range c.Scram {
		if err := sc.validate(); err != nil {
			return nil, err
		}
		code, _ := mechanismCode(sc.Mechanism)
		b = append(b, code)
		b = binary.BigEndian.AppendUint32(b, uint32(sc.Iterations))
		b = append(b, byte(len(sc.Salt)))
		b = append(b, sc.Salt...)
		b = append(b, sc.StoredKey...)
		b = append(b, sc.ServerKey...)
	}
	return b, nil
}

func (sc ScramCredential) validate() error {
	_, size, ok := sc.Mechanism.scramHash()
	switch {
	case !ok:
		return fmt.Errorf("%w: credential mechanism %q", ErrInvalid, sc.Mechanism)
	case sc.Iterations < MinIterations || sc.Iterations > MaxIterations:
		return fmt.Errorf("%w: %s credential with %d iterations", ErrInvalid, sc.Mechanism, sc.Iterations)
	case len(sc.Salt) < minSaltBytes || len(sc.Salt) > 255:
		return fmt.Errorf("%w: %s credential with a %d-byte salt", ErrInvalid, sc.Mechanism, len(sc.Salt))
	case len(sc.StoredKey) != size || len(sc.ServerKey) != size:
		return fmt.Errorf("%w: %s credential keys of %d and %d bytes, want %d", ErrInvalid, sc.Mechanism, len(sc.StoredKey), len(sc.ServerKey), size)
	}
	return nil
}

// DecodeCredentials decodes stored credentials; anything but a well-formed
// version 1 encoding is ErrCorrupt with where it went wrong.
func DecodeCredentials(b []byte) (Credentials, error) {
	if len(b) < 2 {
		return Credentials{}, fmt.Errorf("%w: credentials of %d bytes", ErrCorrupt, len(b))
	}
	if b[0] != credentialsVersion {
		return Credentials{}, fmt.Errorf("%w: credentials version %d, this logd reads %d", ErrCorrupt, b[0], credentialsVersion)
	}
	n := int(b[1])
	if n == 0 || n > len(ScramMechanisms) {
		return Credentials{}, fmt.Errorf("%w: credentials count %d", ErrCorrupt, n)
	}
	c := Credentials{Scram: make([]ScramCredential, 0, n)}
	rest := b[2:]
	for i := range n {
		sc, r, err := decodeScramCredential(rest)
		if err != nil {
			return Credentials{}, fmt.Errorf("%w (credential %d, byte %d)", err, i, len(b)-len(rest))
		}
		if _, dup := c.For(sc.Mechanism); dup {
			return Credentials{}, fmt.Errorf("%w: two %s credentials", ErrCorrupt, sc.Mechanism)
		}
		c.Scram, rest = append(c.Scram, sc), r
	}
	if len(rest) != 0 {
		return Credentials{}, fmt.Errorf("%w: %d bytes after the credentials", ErrCorrupt, len(rest))
	}
	return c, nil
}

func decodeScramCredential(b []byte) (ScramCredential, []byte, error) {
	if len(b) < 6 {
		return ScramCredential{}, nil, fmt.Errorf("%w: truncated credential header", ErrCorrupt)
	}
	var sc ScramCredential
	if int(b[0]) < len(mechanismCodes) {
		sc.Mechanism = mechanismCodes[b[0]]
	}
	_, size, ok := sc.Mechanism.scramHash()
	if !ok {
		return ScramCredential{}, nil, fmt.Errorf("%w: mechanism code %d", ErrCorrupt, b[0])
	}
	sc.Iterations = int(binary.BigEndian.Uint32(b[1:5]))
	salt := int(b[5])
	b = b[6:]
	if len(b) < salt+2*size {
		return ScramCredential{}, nil, fmt.Errorf("%w: truncated %s credential", ErrCorrupt, sc.Mechanism)
	}
	sc.Salt = append([]byte(nil), b[:salt]...)
	sc.StoredKey = append([]byte(nil), b[salt:salt+size]...)
	sc.ServerKey = append([]byte(nil), b[salt+size:salt+2*size]...)
	if err := sc.validate(); err != nil {
		return ScramCredential{}, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return sc, b[salt+2*size:], nil
}
