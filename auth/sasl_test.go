package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdg-go/scram"
)

// newTestAuthenticator has users alice (password "alice-secret") and bob
// ("bob-secret").
func newTestAuthenticator(t *testing.T, c AuthenticatorConfig) (*Authenticator, *MemoryCredentialStore) {
	t.Helper()
	store := NewMemoryCredentialStore()
	for _, u := range []string{"alice", "bob"} {
		putUser(t, store, u, u+"-secret")
	}
	a, err := NewAuthenticator(store, c)
	if err != nil {
		t.Fatal(err)
	}
	return a, store
}

// testCredentials memoizes NewCredentials per password: PBKDF2 under the
// race detector is slow, and the tests make the same users many times.
var testCredentials sync.Map

func putUser(t *testing.T, store CredentialStore, user, password string) {
	t.Helper()
	v, ok := testCredentials.Load(password)
	if !ok {
		c, err := NewCredentials(password, DefaultIterations)
		if err != nil {
			t.Fatal(err)
		}
		v, _ = testCredentials.LoadOrStore(password, c)
	}
	creds := v.(Credentials)
	if err := store.Put(user, creds); err != nil {
		t.Fatal(err)
	}
}

// scramLogin runs a whole exchange with the library's client side, as a
// Kafka client would, and returns the principal and the server's first
// answer. between runs after the client's first message.
func scramLogin(t *testing.T, a *Authenticator, m Mechanism, user, password, authz string, between func()) (Principal, string, error) {
	t.Helper()
	conv := testClient(t, m, user, password, authz).NewConversation()
	x, err := a.Start(m, false)
	if err != nil {
		t.Fatal(err)
	}
	var first string
	msg, err := conv.Step("")
	for i := 0; err == nil && !x.Done(); i++ {
		if i == 1 && between != nil {
			between()
		}
		var resp []byte
		if resp, err = x.Step(context.Background(), []byte(msg)); err != nil {
			break
		}
		if i == 0 {
			first = string(resp)
		}
		msg, err = conv.Step(string(resp))
	}
	if err != nil {
		return Principal{}, first, err
	}
	if !conv.Valid() {
		t.Fatal("the client did not verify the server's signature: the server does not hold the user's credential")
	}
	p, ok := x.Principal()
	if !ok {
		t.Fatal("exchange done without a principal or error")
	}
	return p, first, nil
}

// testClients keeps the library's clients: a client caches the salted
// password per salt, so repeated logins skip the client's PBKDF2.
var testClients sync.Map

func testClient(t *testing.T, m Mechanism, user, password, authz string) *scram.Client {
	t.Helper()
	key := strings.Join([]string{string(m), user, password, authz}, "\x00")
	if c, ok := testClients.Load(key); ok {
		return c.(*scram.Client)
	}
	h, _, _ := m.scramHash()
	cl, err := h.NewClient(user, password, authz)
	if err != nil {
		t.Fatal(err)
	}
	testClients.Store(key, cl)
	return cl
}

func TestScramRightPasswordSucceeds(t *testing.T) {
	a, _ := newTestAuthenticator(t, AuthenticatorConfig{})
	for _, m := range ScramMechanisms {
		p, _, err := scramLogin(t, a, m, "alice", "alice-secret", "", nil)
		if err != nil || p != User("alice") {
			t.Fatalf("%s: %v, %v; want User:alice", m, p, err)
		}
	}
}

func TestScramFailures(t *testing.T) {
	cases := []struct {
		name, user, password, authz string
		between                     func(*MemoryCredentialStore)
	}{
		{name: "wrong password", user: "alice", password: "bob-secret"},
		{name: "unknown user", user: "mallory", password: "x"},
		{name: "another user's authorization identity", user: "alice", password: "alice-secret", authz: "bob"},
		{name: "deleted during the exchange", user: "alice", password: "alice-secret",
			between: func(s *MemoryCredentialStore) { _ = s.Delete("alice") }},
		{name: "password changed during the exchange", user: "alice", password: "alice-secret",
			between: func(s *MemoryCredentialStore) { putUser(t, s, "alice", "new") }},
	}
	for _, m := range ScramMechanisms {
		for _, tc := range cases {
			a, store := newTestAuthenticator(t, AuthenticatorConfig{})
			var between func()
			if tc.between != nil {
				between = func() { tc.between(store) }
			}
			_, _, err := scramLogin(t, a, m, tc.user, tc.password, tc.authz, between)
			var ae *AuthenticationError
			if !errors.As(err, &ae) || !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("%s %s: %v, want an AuthenticationError", m, tc.name, err)
			}
			if strings.Contains(err.Error(), "unknown") || strings.Contains(err.Error(), "proof") {
				t.Errorf("%s %s: client-visible error %q tells why", m, tc.name, err)
			}
		}
	}
}

func TestScramDeletedUserRefusedOnNextLogin(t *testing.T) {
	a, store := newTestAuthenticator(t, AuthenticatorConfig{})
	if _, _, err := scramLogin(t, a, ScramSHA256, "bob", "bob-secret", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete("bob"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := scramLogin(t, a, ScramSHA256, "bob", "bob-secret", "", nil); !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("deleted user: %v", err)
	}
}

// An unknown user gets a first answer shaped like a real one, with the same
// salt every time, so answers do not tell which users exist.
func TestScramUnknownUserLooksLikeAKnownOne(t *testing.T) {
	a, _ := newTestAuthenticator(t, AuthenticatorConfig{DecoyKey: []byte("cluster secret")})
	salt := func(first string) string {
		for _, f := range strings.Split(first, ",") {
			if strings.HasPrefix(f, "s=") {
				return f
			}
		}
		t.Fatalf("no salt in %q", first)
		return ""
	}
	_, known, _ := scramLogin(t, a, ScramSHA256, "alice", "wrong", "", nil)
	_, unknown1, _ := scramLogin(t, a, ScramSHA256, "mallory", "wrong", "", nil)
	_, unknown2, _ := scramLogin(t, a, ScramSHA256, "mallory", "wrong", "", nil)
	if len(salt(known)) != len(salt(unknown1)) || !strings.Contains(unknown1, ",i=4096") {
		t.Errorf("unknown user's first answer %q differs in shape from a known user's %q", unknown1, known)
	}
	if salt(unknown1) != salt(unknown2) {
		t.Errorf("unknown user's salt changes between attempts: %s, %s", salt(unknown1), salt(unknown2))
	}
	b, _ := newTestAuthenticator(t, AuthenticatorConfig{DecoyKey: []byte("cluster secret")})
	if _, other, _ := scramLogin(t, b, ScramSHA256, "mallory", "wrong", "", nil); salt(other) != salt(unknown1) {
		t.Errorf("two nodes with one decoy key answer an unknown user differently")
	}
}

func TestSASLExchangeRefusesMisuse(t *testing.T) {
	a, _ := newTestAuthenticator(t, AuthenticatorConfig{})
	if _, err := a.Start(Plain, false); !errors.Is(err, ErrMechanism) {
		t.Errorf("PLAIN without TLS: %v", err)
	}
	if _, err := a.Start("GSSAPI", true); !errors.Is(err, ErrMechanism) {
		t.Errorf("GSSAPI: %v", err)
	}
	x, _ := a.Start(ScramSHA256, false)
	if _, err := x.Step(context.Background(), make([]byte, MaxSASLMessage+1)); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("oversized message: %v", err)
	}
	if _, err := x.Step(context.Background(), []byte("n,,n=alice,r=abc")); !errors.Is(err, ErrAuthenticationFailed) || !x.Done() {
		t.Errorf("a step after a failure: %v, done %v", err, x.Done())
	}
	if got := a.Mechanisms(false); len(got) != 2 {
		t.Errorf("mechanisms without TLS: %v, want the two SCRAM ones", got)
	}
}

func plainLogin(a *Authenticator, msg string) (Principal, error) {
	x, err := a.Start(Plain, true)
	if err != nil {
		return Principal{}, err
	}
	if _, err := x.Step(context.Background(), []byte(msg)); err != nil {
		return Principal{}, err
	}
	p, _ := x.Principal()
	return p, nil
}

func TestPlain(t *testing.T) {
	a, store := newTestAuthenticator(t, AuthenticatorConfig{})
	cases := []struct {
		msg  string
		want Principal
	}{
		{"\x00alice\x00alice-secret", User("alice")},
		{"alice\x00alice\x00alice-secret", User("alice")},
		{"\x00alice\x00alice-secret", User("alice")}, // from the cache this time
		{"\x00alice\x00bob-secret", Principal{}},
		{"bob\x00alice\x00alice-secret", Principal{}},
		{"\x00mallory\x00x", Principal{}},
		{"alice\x00alice-secret", Principal{}},
	}
	for _, tc := range cases {
		p, err := plainLogin(a, tc.msg)
		if p != tc.want || (tc.want.IsZero() != errors.Is(err, ErrAuthenticationFailed)) {
			t.Errorf("PLAIN %q: %v, %v; want %v", tc.msg, p, err, tc.want)
		}
	}
	// A changed password is never served from the cache, nor a deleted user.
	putUser(t, store, "alice", "changed")
	if _, err := plainLogin(a, "\x00alice\x00alice-secret"); err == nil {
		t.Error("the old password still works after a change")
	}
	if _, err := plainLogin(a, "\x00alice\x00changed"); err != nil {
		t.Error(err)
	}
	_ = store.Delete("alice")
	if _, err := plainLogin(a, "\x00alice\x00changed"); err == nil {
		t.Error("a deleted user logged in")
	}
}

// A flood of wrong passwords queues for the password-check slots. With
// every slot taken (what a flood does), SCRAM logins (no server-side
// PBKDF2) and passwords checked before (cached) still go through, and a
// check that needs a slot waits no longer than its context allows.
func TestFailedLoginFloodDoesNotSlowOthers(t *testing.T) {
	a, _ := newTestAuthenticator(t, AuthenticatorConfig{PasswordChecks: 2})
	if _, err := a.CheckPassword(context.Background(), "bob", "bob-secret"); err != nil {
		t.Fatal(err)
	}
	testClient(t, ScramSHA256, "alice", "alice-secret", "") // made here: t.Fatal belongs to the test goroutine
	a.checks <- struct{}{}                                  // the flood holds every slot
	a.checks <- struct{}{}
	done := make(chan error, 1)
	go func() {
		for range 5 {
			if _, err := a.CheckPassword(context.Background(), "bob", "bob-secret"); err != nil {
				done <- err
				return
			}
			if _, _, err := scramLogin(t, a, ScramSHA256, "alice", "alice-secret", "", nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("cached and SCRAM logins wait behind the password checks")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.CheckPassword(ctx, "alice", "alice-secret"); !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("a check with no slot free: %v, want a failure when its context ends", err)
	}
	// An unknown user waits for a slot and derives like a known one: its
	// failure takes as long as a wrong password's.
	if _, err := a.CheckPassword(ctx, "mallory", "x"); !errors.Is(reasonOf(err), context.DeadlineExceeded) {
		t.Fatalf("an unknown user with no slot free: %v (reason %v), want it to wait for one", err, reasonOf(err))
	}
	<-a.checks
	if _, err := a.CheckPassword(context.Background(), "alice", "alice-secret"); err != nil {
		t.Fatalf("with a slot free again: %v", err)
	}
}

func TestBasicAuthorization(t *testing.T) {
	cases := []struct{ header, user, password string }{
		{"Basic YWxpY2U6YWxpY2Utc2VjcmV0", "alice", "alice-secret"},
		{"basic YWxpY2U6YTpi", "alice", "a:b"},
		{"Bearer YWxpY2U6YWxpY2Utc2VjcmV0", "", ""},
		{"Basic !!!", "", ""},
		{"Basic YWxpY2U=", "", ""}, // no colon
		{"Basic OnB3", "", ""},     // no user
	}
	for _, tc := range cases {
		u, p, err := ParseBasicAuthorization(tc.header)
		if u != tc.user || p != tc.password || (tc.user == "") != (err != nil) {
			t.Errorf("%q: %q %q %v", tc.header, u, p, err)
		}
	}
}

// TestScramRFC7677Exchange replays the SCRAM-SHA-256 example of RFC 7677
// section 3 (user "user", password "pencil") against credentials stored
// the way logd stores them: what a conforming client sends is accepted, and
// the server's answers are the RFC's byte for byte.
func TestScramRFC7677Exchange(t *testing.T) {
	salt, err := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := deriveCredential(ScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	store := NewMemoryCredentialStore()
	if err := store.Put("user", Credentials{Scram: []ScramCredential{sc}}); err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator(store, AuthenticatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a.nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	x, err := a.Start(ScramSHA256, false)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct{ client, server string }{
		{"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
			"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"},
		{"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="},
	}
	for i, s := range steps {
		got, err := x.Step(context.Background(), []byte(s.client))
		if err != nil {
			t.Fatalf("step %d: %v (reason %v)", i, err, reasonOf(err))
		}
		if string(got) != s.server {
			t.Fatalf("step %d answered %q, want %q", i, got, s.server)
		}
	}
	if p, ok := x.Principal(); !ok || p != User("user") || !x.Done() {
		t.Fatalf("after the exchange: %v %v", p, ok)
	}
}

func reasonOf(err error) error {
	var ae *AuthenticationError
	if errors.As(err, &ae) {
		return ae.Reason()
	}
	return nil
}
