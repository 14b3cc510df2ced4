package auth

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"testing"
)

// legacyClient plays librdkafka before 2.6.1: its final message's nonce is
// its own nonce followed by the server's whole nonce (which already starts
// with it), and its proof is computed over that message. double false
// plays a correct client with the same code.
func legacyClient(t *testing.T, x *SASLExchange, h func() hash.Hash, user, pass string, double bool) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	const cnonce = "fyko+d2lbbFgONRv9qkxdawL"
	bare := "n=" + user + ",r=" + cnonce
	first, err := x.Step(ctx, []byte("n,,"+bare))
	if err != nil {
		t.Fatalf("first step: %v", err)
	}
	s1 := string(first)
	nonce, saltB64, iters := scramAttr(s1, 'r'), scramAttr(s1, 's'), scramAttr(s1, 'i')
	salt, err := base64.StdEncoding.DecodeString(saltB64)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(iters)
	if err != nil {
		t.Fatal(err)
	}
	salted, err := pbkdf2.Key(h, pass, salt, n, h().Size())
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	storedKey := sum.Sum(nil)
	r := nonce
	if double {
		r = cnonce + nonce
	}
	withoutProof := "c=biws,r=" + r
	authMsg := bare + "," + s1 + "," + withoutProof
	sig := mac(storedKey, authMsg)
	proof := make([]byte, len(sig))
	for i := range sig {
		proof[i] = clientKey[i] ^ sig[i]
	}
	final, err := x.Step(ctx, []byte(withoutProof+",p="+base64.StdEncoding.EncodeToString(proof)))
	if err != nil {
		return nil, err
	}
	if want := "v=" + base64.StdEncoding.EncodeToString(mac(mac(salted, "Server Key"), authMsg)); string(final) != want {
		t.Fatalf("server-final %q, want %q", final, want)
	}
	return final, nil
}

func TestScramLibrdkafkaDoubledNonce(t *testing.T) {
	store := NewMemoryCredentialStore()
	creds, err := NewCredentials("s3cret", DefaultIterations)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put("alice", creds); err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator(store, AuthenticatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		mech Mechanism
		h    func() hash.Hash
	}{{ScramSHA256, sha256.New}, {ScramSHA512, sha512.New}} {
		for _, tc := range []struct {
			name, user, pass string
			double, ok       bool
		}{
			{"doubled nonce", "alice", "s3cret", true, true},
			{"correct nonce", "alice", "s3cret", false, true},
			{"doubled nonce, wrong password", "alice", "wrong", true, false},
			{"doubled nonce, unknown user", "bob", "s3cret", true, false},
		} {
			x, err := a.Start(m.mech, false)
			if err != nil {
				t.Fatal(err)
			}
			_, err = legacyClient(t, x, m.h, tc.user, tc.pass, tc.double)
			p, ok := x.Principal()
			switch {
			case tc.ok && (err != nil || !ok || p != User("alice") || !x.Done()):
				t.Errorf("%s %s: %v, principal %v %v; want alice", m.mech, tc.name, err, p, ok)
			case !tc.ok && (!errors.Is(err, ErrAuthenticationFailed) || ok):
				t.Errorf("%s %s: %v, principal %v %v; want an authentication failure", m.mech, tc.name, err, p, ok)
			}
		}
	}
}

// Any nonce other than the server's and librdkafka's doubled form is
// refused, and so is a doubled nonce with another channel binding.
func TestScramOtherNoncesRefused(t *testing.T) {
	store := NewMemoryCredentialStore()
	creds, _ := NewCredentials("s3cret", DefaultIterations)
	_ = store.Put("alice", creds)
	a, _ := NewAuthenticator(store, AuthenticatorConfig{})
	for _, final := range []func(cnonce, nonce string) string{
		func(cnonce, nonce string) string { return "c=biws,r=" + cnonce + ",p=AAAA" },
		func(cnonce, nonce string) string { return "c=biws,r=x" + nonce + ",p=AAAA" },
		func(cnonce, nonce string) string { return "c=eSws,r=" + cnonce + nonce + ",p=AAAA" },
		func(cnonce, nonce string) string { return "c=biws,r=" + cnonce + nonce },
	} {
		x, _ := a.Start(ScramSHA256, false)
		first, err := x.Step(context.Background(), []byte("n,,n=alice,r=abcdefgh"))
		if err != nil {
			t.Fatal(err)
		}
		msg := final("abcdefgh", scramAttr(string(first), 'r'))
		if _, err := x.Step(context.Background(), []byte(msg)); !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("final %q: %v, want an authentication failure", msg, err)
		}
	}
}
