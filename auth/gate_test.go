package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"testing"
)

func TestGateIdentify(t *testing.T) {
	a, _ := newTestAuthenticator(t, AuthenticatorConfig{})
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "carol"}}
	mtls := &tls.ConnectionState{HandshakeComplete: true, VerifiedChains: [][]*x509.Certificate{{cert}}}
	plainTLS := &tls.ConnectionState{HandshakeComplete: true}
	basic := func(user, pw string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
	}
	cases := []struct {
		name string
		mode AuthMode
		pr   Presented
		want Principal
		err  error
	}{
		{"none ignores everything", AuthNone, Presented{Authorization: basic("alice", "wrong")}, Anonymous, nil},
		{"certificate", AuthRequired, Presented{TLS: mtls}, User("carol"), nil},
		{"password over TLS", AuthRequired, Presented{TLS: plainTLS, Authorization: basic("alice", "alice-secret")}, alice, nil},
		{"password wins over certificate", AuthRequired, Presented{TLS: mtls, Authorization: basic("alice", "alice-secret")}, alice, nil},
		{"SASL wins over certificate", AuthRequired, Presented{TLS: mtls, SASL: bob}, bob, nil},
		{"wrong password is not anonymous", AuthOptional, Presented{TLS: plainTLS, Authorization: basic("alice", "x")}, Principal{}, ErrAuthenticationFailed},
		{"password without TLS", AuthOptional, Presented{Authorization: basic("alice", "alice-secret")}, Principal{}, ErrPlaintextCredentials},
		{"not Basic", AuthOptional, Presented{TLS: plainTLS, Authorization: "Bearer x"}, Principal{}, ErrAuthenticationFailed},
		{"nothing, optional", AuthOptional, Presented{TLS: plainTLS}, Anonymous, nil},
		{"nothing, required", AuthRequired, Presented{}, Principal{}, ErrUnauthenticated},
		{"unverified certificate, required", AuthRequired, Presented{TLS: plainTLS}, Principal{}, ErrUnauthenticated},
	}
	for _, tc := range cases {
		tc.pr.Addr = "10.0.0.1:1"
		id, err := Gate{Mode: tc.mode, Authenticator: a}.Identify(context.Background(), tc.pr)
		if !errors.Is(err, tc.err) || id.Principal != tc.want || (err == nil && id.Addr != tc.pr.Addr) {
			t.Errorf("%s: %+v, %v; want %v, %v", tc.name, id, err, tc.want, tc.err)
		}
	}
}
