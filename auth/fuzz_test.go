package auth

import (
	"context"
	"errors"
	"testing"
)

func FuzzParsePrincipal(f *testing.F) {
	for _, s := range []string{"User:alice", "User:*", "User:a:b", "Group:x", "User:", ":", "User: a", "User:\x00", "User:a,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePrincipal(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if p.String() != s {
			t.Fatalf("%q parsed as %v, printed %q", s, p, p.String())
		}
	})
}

func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{"\x00alice\x00pw", "alice\x00alice\x00pw", "\x00\x00", "a\x00b", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		user, pw, err := ParsePlain(msg)
		if err != nil {
			if !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("error %v is not ErrAuthenticationFailed", err)
			}
			return
		}
		if user == "" || pw == "" {
			t.Fatalf("%q parsed to an empty user or password", msg)
		}
	})
}

func FuzzParseBasicAuthorization(f *testing.F) {
	for _, s := range []string{"Basic YWxpY2U6cHc=", "basic Og==", "Basic", "Bearer x", "Basic !!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		user, pw, err := ParseBasicAuthorization(h)
		if err == nil && (user == "" || pw == "") {
			t.Fatalf("%q parsed to an empty user or password", h)
		}
	})
}

// FuzzSASLExchange feeds arbitrary client messages to a SCRAM server
// conversation (user alice exists): it must never panic, never answer a
// SCRAM first message that names no user, and never authenticate a client
// that cannot know the password.
func FuzzSASLExchange(f *testing.F) {
	f.Add(uint8(0), []byte("n,,n=,r=fyko+d2lbbFgONRv9qkxdawL"), []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="))
	f.Add(uint8(1), []byte("n,a=,n=,r=x"), []byte("c=biws,r=x,p="))
	f.Add(uint8(2), []byte("\x00\x00pw"), []byte(nil))
	f.Add(uint8(0), []byte("n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"), []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="))
	f.Add(uint8(1), []byte("n,a=alice,n=alice,r=x"), []byte("c=biws,r=x,p="))
	f.Add(uint8(2), []byte("\x00alice\x00wrong"), []byte(nil))
	f.Add(uint8(0), []byte("y,,n=al=2Cice,r=x,e=1"), []byte("c=eSws,r=x,p=AAAA"))
	a, _ := fuzzAuthenticator(f)
	f.Fuzz(func(t *testing.T, mech uint8, first, final []byte) {
		m := []Mechanism{ScramSHA256, ScramSHA512, Plain}[int(mech)%3]
		x, err := a.Start(m, true)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		_, err = x.Step(ctx, first)
		if err == nil && m != Plain && x.user == "" {
			t.Fatalf("%s answered a first message that names no user: %q", m, first)
		}
		if err == nil && !x.Done() {
			_, _ = x.Step(ctx, final)
		}
		if p, ok := x.Principal(); ok {
			t.Fatalf("%s authenticated %v from fuzzed messages", m, p)
		}
	})
}

func fuzzAuthenticator(f *testing.F) (*Authenticator, *MemoryCredentialStore) {
	store := NewMemoryCredentialStore()
	c, err := NewCredentials("a password no fuzzer guesses", DefaultIterations)
	if err != nil {
		f.Fatal(err)
	}
	if err := store.Put("alice", c); err != nil {
		f.Fatal(err)
	}
	a, err := NewAuthenticator(store, AuthenticatorConfig{PasswordCacheTTL: -1})
	if err != nil {
		f.Fatal(err)
	}
	return a, store
}

func FuzzDecodeACL(f *testing.F) {
	for _, a := range []ACL{
		aclOn(alice, Allow, OpRead, ResourceTopic, PatternLiteral, "orders"),
		aclOn(AnyUser, Deny, OpAll, ResourceGroup, PatternPrefixed, "g-"),
		aclOn(root, Allow, OpAlter, ResourceCluster, PatternLiteral, ""),
	} {
		b, err := a.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeACL(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := a.MarshalBinary()
		if err != nil || string(again) != string(b) {
			t.Fatalf("re-encoding %x gave %x, %v", b, again, err)
		}
	})
}
