package kafka

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logd/logd/auth"
)

// FuzzRequestBeforeAuth feeds up to three request bodies, in order, to one
// connection of a listener under --auth required that has not logged in:
// the path an unauthenticated client reaches (admission, SaslHandshake,
// SaslAuthenticate and v0's bare tokens, ApiVersions). Nothing may panic,
// a request of another API is refused while unauthenticated, nobody logs
// in without the password, and a SCRAM first message that names no user
// is never answered with a challenge.
func FuzzRequestBeforeAuth(f *testing.F) {
	hs := func(v int16, m string) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = v, m
		return frame(r, 1)[4:]
	}
	sa := func(msg string) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = 2, []byte(msg)
		return frame(r, 2)[4:]
	}
	meta := frame(kmsg.NewPtrMetadataRequest(), 3)[4:]
	versions := frame(kmsg.NewPtrApiVersionsRequest(), 0)[4:]
	f.Add(hs(1, "SCRAM-SHA-256"), sa("n,,n=,r=fyko+d2lbbFgONRv9qkxdawL"), meta)
	f.Add(hs(1, "SCRAM-SHA-512"), sa("n,a=,n=,r=x"), sa("c=biws,r=x,p="))
	f.Add(hs(0, "SCRAM-SHA-256"), []byte("n,,n=,r=x"), meta)
	f.Add(hs(1, "SCRAM-SHA-256"), sa("n,,n=alice,r=x"), sa("c=biws,r=x,p=AAAA"))
	f.Add(hs(1, "PLAIN"), sa("\x00alice\x00guess"), meta)
	f.Add(versions, meta, []byte(nil))
	f.Add(sa("n,,n=alice,r=x"), hs(1, "SCRAM-SHA-256"), hs(1, "SCRAM-SHA-256"))
	a := beforeAuthAuthenticator(f)
	f.Fuzz(func(t *testing.T, b1, b2, b3 []byte) {
		c, closeConn := beforeAuthConn(a)
		defer closeConn()
		for _, body := range [][]byte{b1, b2, b3} {
			if !beforeAuthStep(t, c, body) {
				break
			}
		}
		if c.sess.admitted {
			t.Fatalf("a connection logged in from fuzzed requests as %v", c.sess.id.Principal)
		}
	})
}

// beforeAuthStep serves one body as conn.read would; false: the
// connection would close.
func beforeAuthStep(t *testing.T, c *conn, body []byte) bool {
	if c.sess.x != nil && c.sess.legacy {
		out, err := c.stepSASL(body)
		if err == nil && bytes.Contains(body, []byte(",n=,")) && len(out) > 0 {
			t.Fatalf("a v0 SCRAM first message naming no user was answered %q", out)
		}
		return err == nil
	}
	h, req, err := parseRequest(body)
	if err != nil {
		return false
	}
	if err := c.admit(h); err != nil {
		if h.key == apiVersionsKey || h.key == saslHandshakeKey || h.key == saslAuthenticateKey {
			t.Fatalf("%s refused before authentication: %v", kmsg.NameForKey(h.key), err)
		}
		return false
	}
	if !c.sess.admitted && h.key != apiVersionsKey && h.key != saslHandshakeKey && h.key != saslAuthenticateKey {
		t.Fatalf("%s admitted before authentication", kmsg.NameForKey(h.key))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r := &request{ctx: ctx, c: c, hdr: h, kreq: req}
	resp := apis[h.key].handle(c.s, r)()
	if sr, ok := resp.(*kmsg.SASLAuthenticateResponse); ok && sr.ErrorCode == 0 && len(sr.SASLAuthBytes) > 0 &&
		bytes.Contains(req.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes, []byte(",n=,")) {
		t.Fatalf("a SCRAM first message naming no user was answered %q", sr.SASLAuthBytes)
	}
	if resp != nil {
		appendResponse(nil, h.corr, resp)
	}
	return r.fatal == nil
}

// beforeAuthConn is an unauthenticated plaintext connection of a listener
// under --auth required with a.
func beforeAuthConn(a *auth.Authenticator) (*conn, func()) {
	core := newFakeCore()
	s := &Server{core: core, log: quietLogger(), host: "127.0.0.1", port: 9092,
		cfg: Config{Gate: auth.Gate{Mode: auth.AuthRequired, Authenticator: a}}}
	nc, peer := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{s: s, nc: nc, remoteHost: "127.0.0.1", log: s.log, ctx: ctx, cancel: cancel, rctx: ctx}
	return c, func() {
		cancel()
		nc.Close()
		peer.Close()
		core.coord.Close()
	}
}

func beforeAuthAuthenticator(f *testing.F) *auth.Authenticator {
	store := auth.NewMemoryCredentialStore()
	creds, err := auth.NewCredentials("a password no fuzzer guesses", auth.DefaultIterations)
	if err != nil {
		f.Fatal(err)
	}
	if err := store.Put("alice", creds); err != nil {
		f.Fatal(err)
	}
	a, err := auth.NewAuthenticator(store, auth.AuthenticatorConfig{PasswordCacheTTL: -1})
	if err != nil {
		f.Fatal(err)
	}
	return a
}
