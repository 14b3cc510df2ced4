package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// AuthenticationError is a failed login. Its message is the same whatever
// the cause (unknown user, wrong password, bad proof, deleted user), so it
// can go to the client as is; Reason is for the server's log.
type AuthenticationError struct {
	Mechanism Mechanism
	User      string
	reason    error
}

func (e *AuthenticationError) Error() string {
	return fmt.Sprintf("auth: authentication of %q with %s failed: wrong user name or password", e.User, e.Mechanism)
}

// Unwrap makes errors.Is(err, ErrAuthenticationFailed) true.
func (e *AuthenticationError) Unwrap() error { return ErrAuthenticationFailed }

// Reason is why the login failed, for the server's log only: telling the
// client would let it enumerate users.
func (e *AuthenticationError) Reason() error { return e.reason }

// AuthenticatorConfig tunes an Authenticator; the zero value is usable.
type AuthenticatorConfig struct {
	// DecoyKey derives the made-up salt an unknown user is answered with.
	// Nodes of a cluster should share one (the core can keep it in the
	// metadata), so comparing two nodes' answers does not tell a real user
	// from an unknown one. Empty: a random key per process.
	DecoyKey []byte
	// PasswordChecks bounds how many password derivations (PBKDF2, for
	// PLAIN and Basic) run at once; zero is half the CPUs, at least 1. A
	// flood of wrong passwords queues here instead of taking every core.
	PasswordChecks int
	// PasswordCacheTTL is how long a checked user and password are
	// remembered so the next check of the same pair skips PBKDF2; zero is
	// five minutes, negative disables the cache. A changed or deleted
	// credential is never served from it.
	PasswordCacheTTL time.Duration
}

// Authenticator turns what a client presents (a SASL exchange, or a user
// and password) into a Principal, checking it against the CredentialStore.
// It is safe for concurrent use; front-ends share one.
type Authenticator struct {
	store    CredentialStore
	decoyKey []byte
	checks   chan struct{}
	cache    *passwordCache
	// nonce replaces the library's server nonce generator in tests of
	// published exchanges; nil in use.
	nonce func() string
}

// NewAuthenticator checks logins against store.
func NewAuthenticator(store CredentialStore, c AuthenticatorConfig) (*Authenticator, error) {
	a := &Authenticator{store: store, decoyKey: c.DecoyKey}
	if len(a.decoyKey) == 0 {
		a.decoyKey = make([]byte, 32)
		if _, err := rand.Read(a.decoyKey); err != nil {
			return nil, err
		}
	}
	n := c.PasswordChecks
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)/2)
	}
	a.checks = make(chan struct{}, n)
	if c.PasswordCacheTTL >= 0 {
		ttl := c.PasswordCacheTTL
		if ttl == 0 {
			ttl = 5 * time.Minute
		}
		cache, err := newPasswordCache(ttl)
		if err != nil {
			return nil, err
		}
		a.cache = cache
	}
	return a, nil
}

// Mechanisms are the SASL mechanisms to offer (Kafka SaslHandshake): PLAIN
// only over TLS, since it sends the password itself.
func (a *Authenticator) Mechanisms(overTLS bool) []Mechanism {
	if overTLS {
		return []Mechanism{ScramSHA256, ScramSHA512, Plain}
	}
	return []Mechanism{ScramSHA256, ScramSHA512}
}

// CheckPassword authenticates a user and password (SASL PLAIN, or the
// Basic credentials of a gRPC or HTTP request). ctx bounds the wait for a
// password check slot.
func (a *Authenticator) CheckPassword(ctx context.Context, user, password string) (Principal, error) {
	fail := func(reason error) (Principal, error) {
		return Principal{}, &AuthenticationError{Mechanism: Plain, User: user, reason: reason}
	}
	sc, known := a.passwordCredential(user)
	if known && a.cache != nil && a.cache.has(user, sc, password) {
		return User(user), nil
	}
	select {
	case a.checks <- struct{}{}:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	// An unknown user is checked against a decoy, so it costs the same
	// time as a wrong password and its answer cannot be told apart by
	// timing.
	good := sc.matches(password)
	<-a.checks
	switch {
	case !known:
		return fail(ErrUnknownUser)
	case !good:
		return fail(errors.New("wrong password"))
	}
	if a.cache != nil {
		a.cache.add(user, sc, password)
	}
	return User(user), nil
}

// passwordCredential is the credential a password is checked against:
// the user's SCRAM-SHA-256 one (either would do; it is the cheaper), or a
// decoy when there is none.
func (a *Authenticator) passwordCredential(user string) (ScramCredential, bool) {
	if creds, err := a.store.Lookup(user); err == nil {
		for _, m := range ScramMechanisms {
			if sc, ok := creds.For(m); ok {
				return sc, true
			}
		}
	}
	return a.decoy(ScramSHA256, user), false
}

// decoy is the credential an unknown user is answered with: a salt derived
// from the user name (the same on every attempt, like a real one) and keys
// no password derives.
func (a *Authenticator) decoy(m Mechanism, user string) ScramCredential {
	_, size, _ := m.scramHash()
	mac := func(label string) []byte {
		h := hmac.New(sha256.New, a.decoyKey)
		h.Write([]byte(label + "\x00" + string(m) + "\x00" + user))
		sum := h.Sum(nil)
		for len(sum) < size {
			sum = append(sum, sum...)
		}
		return sum[:size]
	}
	return ScramCredential{Mechanism: m, Salt: mac("salt")[:saltBytes], Iterations: DefaultIterations,
		StoredKey: mac("stored"), ServerKey: mac("server")}
}

// passwordCache remembers recently checked (user, credential, password)
// triples as keyed MACs, never the password: a hit needs the same password
// and the same stored credential, so a changed or deleted user misses.
type passwordCache struct {
	key []byte
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cachedPassword
}

type cachedPassword struct {
	tag     []byte
	expires time.Time
}

const passwordCacheSize = 10000

func newPasswordCache(ttl time.Duration) (*passwordCache, error) {
	c := &passwordCache{key: make([]byte, 32), ttl: ttl, m: map[string]cachedPassword{}}
	if _, err := rand.Read(c.key); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *passwordCache) tag(user string, sc ScramCredential, password string) []byte {
	h := hmac.New(sha256.New, c.key)
	for _, part := range [][]byte{[]byte(user), []byte(sc.Mechanism), sc.Salt, sc.StoredKey, []byte(password)} {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(part))))
		h.Write(part)
	}
	return h.Sum(nil)
}

func (c *passwordCache) has(user string, sc ScramCredential, password string) bool {
	t := c.tag(user, sc, password)
	c.mu.Lock()
	e, ok := c.m[user]
	c.mu.Unlock()
	return ok && time.Now().Before(e.expires) && hmac.Equal(e.tag, t)
}

func (c *passwordCache) add(user string, sc ScramCredential, password string) {
	t := c.tag(user, sc, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= passwordCacheSize {
		// Full: drop expired entries, else any one (map order). Only a
		// correct password is added, so filling it needs many real users.
		now := time.Now()
		for u, e := range c.m {
			if now.After(e.expires) {
				delete(c.m, u)
			}
		}
		for u := range c.m {
			if len(c.m) < passwordCacheSize {
				break
			}
			delete(c.m, u)
		}
	}
	c.m[user] = cachedPassword{tag: t, expires: time.Now().Add(c.ttl)}
}
