package auth

import (
	"context"
	"errors"
	"testing"
)

// TestScramEmptyUserRefused: a SCRAM first message that names no user is
// refused at once, as a failed login, for both hashes.
func TestScramEmptyUserRefused(t *testing.T) {
	a, store := newTestAuthenticator(t, AuthenticatorConfig{})
	putUser(t, store, "alice", "pw")
	for _, m := range []Mechanism{ScramSHA256, ScramSHA512} {
		for _, first := range []string{"n,,n=,r=fyko+d2lbbFgONRv9qkxdawL", "n,a=,n=,r=x"} {
			x, err := a.Start(m, false)
			if err != nil {
				t.Fatal(err)
			}
			out, err := x.Step(context.Background(), []byte(first))
			var ae *AuthenticationError
			if !errors.As(err, &ae) || out != nil {
				t.Fatalf("%s %q: answered %q, %v; want a failed login for the empty user name", m, first, out, err)
			}
			if !x.Done() {
				t.Fatalf("%s %q: the exchange goes on after the refusal", m, first)
			}
		}
	}
}
