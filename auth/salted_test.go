package auth

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"testing"
)

// A credential from a client's salted password equals the one derived
// from the password itself, for both mechanisms.
func TestSaltedCredentialMatchesDerived(t *testing.T) {
	salt := []byte("0123456789abcdef")
	for m, h := range map[Mechanism]func() hash.Hash{ScramSHA256: sha256.New, ScramSHA512: sha512.New} {
		want, err := deriveCredential(m, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := pbkdf2.Key(h, "pencil", salt, 4096, h().Size())
		if err != nil {
			t.Fatal(err)
		}
		got, err := SaltedCredential(m, salt, sp, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) || !got.matches("pencil") {
			t.Errorf("%s: credential from the salted password differs from the derived one", m)
		}
	}
	if _, err := SaltedCredential(ScramSHA256, salt, make([]byte, 32), 100); err == nil {
		t.Error("100 iterations accepted")
	}
	if _, err := SaltedCredential(Plain, salt, make([]byte, 32), 4096); err == nil {
		t.Error("PLAIN accepted as a SCRAM mechanism")
	}
}
