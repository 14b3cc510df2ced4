package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/auth/tlsconfig"
	"github.com/logd/logd/internal/testcerts"
)

// principalCore is the fake core that records the principal of every
// TopicLayouts call (Metadata listing all topics).
type principalCore struct {
	*fakeCore
	mu   sync.Mutex
	seen []Principal
}

func (p *principalCore) TopicLayouts(ctx context.Context, pr Principal) ([]TopicInfo, error) {
	p.mu.Lock()
	p.seen = append(p.seen, pr)
	p.mu.Unlock()
	return p.fakeCore.TopicLayouts(ctx, pr)
}

func (p *principalCore) principals() []Principal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// secureSetup is a listener with users (alice/s3cret) and, optionally,
// TLS from a test CA.
type secureSetup struct {
	core *principalCore
	s    *Server
	ca   *testcerts.CA
	dir  string
}

type secureOpts struct {
	mode   auth.AuthMode
	tls    bool
	mutual bool // --tls-client-ca: the test CA
	core   Core // nil: the setup's principalCore
}

func startSecure(t *testing.T, o secureOpts) *secureSetup {
	t.Helper()
	store := auth.NewMemoryCredentialStore()
	for user, pass := range map[string]string{"alice": "s3cret", "mallory": "m4llory"} {
		creds, err := auth.NewCredentials(pass, auth.DefaultIterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Put(user, creds); err != nil {
			t.Fatal(err)
		}
	}
	authn, err := auth.NewAuthenticator(store, auth.AuthenticatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ss := &secureSetup{core: &principalCore{fakeCore: newFakeCore()}, ca: testcerts.NewCA(t, "kafka-test-ca"), dir: t.TempDir()}
	cfg := Config{Gate: auth.Gate{Mode: o.mode, Authenticator: authn}}
	if o.tls {
		cert, key := ss.ca.Pair(t, ss.dir, "node")
		files := tlsconfig.ServerFiles{CertFile: cert, KeyFile: key}
		if o.mutual {
			files.ClientCAFile = ss.ca.File
		}
		srv, err := tlsconfig.NewServer(files)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLS = srv.TLSConfig()
	}
	var core Core = ss.core
	if o.core != nil {
		core = o.core
	}
	ss.s = startServer(t, core, cfg)
	return ss
}

// clientTLS trusts the setup's CA and presents a certificate for cn ("":
// none).
func (ss *secureSetup) clientTLS(t *testing.T, cn string) *tls.Config {
	t.Helper()
	files := tlsconfig.ClientFiles{CAFile: ss.ca.File}
	if cn != "" {
		files.CertFile, files.KeyFile = ss.ca.Pair(t, t.TempDir(), cn)
	}
	cfg, err := tlsconfig.NewClient(files)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// metadata asks for every topic, once, within a few seconds.
func metadata(t *testing.T, cl *kgo.Client) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err
}

func scramAuth(mech auth.Mechanism, user, pass string) sasl.Mechanism {
	a := scram.Auth{User: user, Pass: pass}
	if mech == auth.ScramSHA512 {
		return a.AsSha512Mechanism()
	}
	return a.AsSha256Mechanism()
}

func TestKafkaTLS(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthNone, tls: true})
	addr := ss.s.Addr().String()
	good := newClient(t, addr, kgo.DialTLSConfig(ss.clientTLS(t, "")))
	if err := metadata(t, good); err != nil {
		t.Fatalf("client over TLS: %v", err)
	}
	if err := metadata(t, newClient(t, addr)); err == nil {
		t.Fatal("a plaintext client was served by the TLS listener")
	}
	other := testcerts.NewCA(t, "another-ca")
	wrongCA, err := tlsconfig.NewClient(tlsconfig.ClientFiles{CAFile: other.File})
	if err != nil {
		t.Fatal(err)
	}
	if err := metadata(t, newClient(t, addr, kgo.DialTLSConfig(wrongCA))); err == nil {
		t.Fatal("a client trusting another CA was served")
	}
}

func TestKafkaMutualTLSNamesThePrincipal(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired, tls: true, mutual: true})
	addr := ss.s.Addr().String()
	if err := metadata(t, newClient(t, addr, kgo.DialTLSConfig(ss.clientTLS(t, "alice")))); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	if got := ss.core.principals(); !slices.Equal(got, []Principal{"User:alice"}) {
		t.Fatalf("the core saw principals %q, want [User:alice]", got)
	}
	if err := metadata(t, newClient(t, addr, kgo.DialTLSConfig(ss.clientTLS(t, "")))); err == nil {
		t.Fatal("a client without a certificate was served under mutual TLS")
	}
}

func TestKafkaSASLSCRAM(t *testing.T) {
	for _, mech := range []auth.Mechanism{auth.ScramSHA256, auth.ScramSHA512} {
		t.Run(string(mech), func(t *testing.T) {
			ss := startSecure(t, secureOpts{mode: auth.AuthRequired})
			addr := ss.s.Addr().String()
			if err := metadata(t, newClient(t, addr, kgo.SASL(scramAuth(mech, "alice", "s3cret")))); err != nil {
				t.Fatalf("right password: %v", err)
			}
			if got := ss.core.principals(); !slices.Equal(got, []Principal{"User:alice"}) {
				t.Fatalf("the core saw principals %q, want [User:alice]", got)
			}
			for _, who := range [][2]string{{"alice", "wrong"}, {"bob", "s3cret"}} {
				err := metadata(t, newClient(t, addr, kgo.SASL(scramAuth(mech, who[0], who[1]))))
				if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "wrong user name or password") {
					t.Errorf("%s/%s: %v, want SASL_AUTHENTICATION_FAILED with a message", who[0], who[1], err)
				}
			}
			if err := metadata(t, newClient(t, addr)); err == nil {
				t.Error("a client without credentials was served under --auth required")
			}
			if got := len(ss.core.principals()); got != 1 {
				t.Errorf("the core was called %d times, want once (for the good login only)", got)
			}
		})
	}
}

func TestKafkaSASLPlainOnlyOverTLS(t *testing.T) {
	alice := kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism())
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired, tls: true})
	if err := metadata(t, newClient(t, ss.s.Addr().String(), alice, kgo.DialTLSConfig(ss.clientTLS(t, "")))); err != nil {
		t.Fatalf("PLAIN over TLS: %v", err)
	}
	wrong := kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism())
	if err := metadata(t, newClient(t, ss.s.Addr().String(), wrong, kgo.DialTLSConfig(ss.clientTLS(t, "")))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("PLAIN with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	clear := startSecure(t, secureOpts{mode: auth.AuthRequired})
	err := metadata(t, newClient(t, clear.s.Addr().String(), alice))
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("PLAIN without TLS: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
	if got := clear.core.principals(); len(got) != 0 {
		t.Fatalf("PLAIN without TLS reached the core as %q", got)
	}
}

func TestKafkaSASLOptionalAdmitsAnonymous(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthOptional})
	addr := ss.s.Addr().String()
	if err := metadata(t, newClient(t, addr)); err != nil {
		t.Fatal(err)
	}
	if err := metadata(t, newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "alice", "s3cret")))); err != nil {
		t.Fatal(err)
	}
	if err := metadata(t, newClient(t, addr, kgo.SASL(scramAuth(auth.ScramSHA256, "alice", "bad")))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password under --auth optional: %v, want SASL_AUTHENTICATION_FAILED (never anonymous)", err)
	}
	if got := ss.core.principals(); !slices.Equal(got, []Principal{"", "User:alice"}) {
		t.Fatalf("the core saw principals %q, want [\"\" User:alice]", got)
	}
}

// Under --auth required, a request other than ApiVersions and SASL before
// authentication closes the connection, unanswered.
func TestKafkaUnauthenticatedRequestClosesTheConnection(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthRequired})
	c := dialRaw(t, ss.s)
	c.send(frame(kmsg.NewPtrApiVersionsRequest(), 1))
	var av kmsg.ApiVersionsResponse
	c.recv(&av)
	sasl := map[int16]bool{}
	for _, k := range av.ApiKeys {
		sasl[k.ApiKey] = (k.ApiKey == 17 && k.MinVersion == 0 && k.MaxVersion == 1) || (k.ApiKey == 36 && k.MinVersion == 0 && k.MaxVersion == 2)
	}
	if !sasl[17] || !sasl[36] {
		t.Fatalf("ApiVersions does not advertise SaslHandshake v0-1 and SaslAuthenticate v0-2: %+v", av.ApiKeys)
	}
	c.send(frame(metadataV(1), 2))
	c.expectClosed()
	if got := ss.core.principals(); len(got) != 0 {
		t.Fatalf("an unauthenticated Metadata reached the core (%q)", got)
	}
}

func TestKafkaSASLStateErrors(t *testing.T) {
	ss := startSecure(t, secureOpts{mode: auth.AuthOptional})
	handshake := func() *kmsg.SASLHandshakeRequest {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = 1, "SCRAM-SHA-256"
		return r
	}
	t.Run("authenticate without handshake", func(t *testing.T) {
		c := dialRaw(t, ss.s)
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, []byte("n,,n=alice,r=abc")
		c.send(frame(req, 1))
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		c.recv(resp)
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("error %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
		}
		c.expectClosed()
	})
	t.Run("handshake after another request", func(t *testing.T) {
		c := dialRaw(t, ss.s)
		c.send(frame(metadataV(1), 1))
		c.recv(metadataV(1).ResponseKind())
		req := handshake()
		c.send(frame(req, 2))
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		c.recv(resp)
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("error %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
		}
		c.expectClosed()
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		c := dialRaw(t, ss.s)
		req := handshake()
		req.Mechanism = "GSSAPI"
		c.send(frame(req, 1))
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		c.recv(resp)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(resp.SupportedMechanisms, []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}) {
			t.Fatalf("error %d, mechanisms %q; want UNSUPPORTED_SASL_MECHANISM and the SCRAM ones", resp.ErrorCode, resp.SupportedMechanisms)
		}
		c.expectClosed()
	})
}

// SaslHandshake v0: the exchange's tokens follow as bare frames.
func TestKafkaSASLHandshakeV0(t *testing.T) {
	for _, pass := range []string{"s3cret", "wrong"} {
		ss := startSecure(t, secureOpts{mode: auth.AuthRequired})
		c := dialRaw(t, ss.s)
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = 0, "SCRAM-SHA-512"
		c.send(frame(req, 1))
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		c.recv(resp)
		if resp.ErrorCode != 0 {
			t.Fatalf("handshake v0: error %d", resp.ErrorCode)
		}
		client, err := xscram.SHA512.NewClient("alice", pass, "")
		if err != nil {
			t.Fatal(err)
		}
		conv := client.NewConversation()
		msg, _ := conv.Step("")
		closed := false
		for !conv.Done() && !closed {
			c.send(append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...))
			tok, err := readFrame(c.br, 1<<20)
			switch {
			case errors.Is(err, io.EOF):
				closed = true
			case err != nil:
				t.Fatalf("reading a token: %v", err)
			default:
				if msg, err = conv.Step(string(tok)); err != nil {
					t.Fatalf("server's token: %v", err)
				}
			}
		}
		if closed != (pass == "wrong") {
			t.Fatalf("password %q: connection closed %v", pass, closed)
		}
		if closed {
			continue
		}
		if !conv.Valid() {
			t.Fatal("the server's final message does not verify")
		}
		c.send(frame(metadataV(1), 2))
		c.recv(metadataV(1).ResponseKind())
		if got := ss.core.principals(); !slices.Equal(got, []Principal{"User:alice"}) {
			t.Fatalf("the core saw principals %q, want [User:alice]", got)
		}
	}
}
