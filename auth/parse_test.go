package auth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"
)

func TestParsePrincipal(t *testing.T) {
	cases := []struct {
		in   string
		want Principal
		err  string
	}{
		{"User:alice", alice, ""},
		{"User:*", AnyUser, ""},
		{"User:CN with spaces", User("CN with spaces"), ""},
		{"User:a:b", User("a:b"), ""},
		{"alice", Principal{}, "want User:NAME"},
		{"Group:ops", Principal{}, `type "Group"`},
		{"user:alice", Principal{}, `type "user"`},
		{"User:", Principal{}, "empty name"},
		{"User: alice", Principal{}, "space"},
		{"User:a,b", Principal{}, "comma"},
		{"User:a\x00", Principal{}, "control"},
		{"User:" + strings.Repeat("x", 257), Principal{}, "at most 256"},
		{"User:\xff", Principal{}, "UTF-8"},
	}
	for _, tc := range cases {
		p, err := ParsePrincipal(tc.in)
		if tc.err == "" {
			if err != nil || p != tc.want {
				t.Errorf("%q: %v, %v", tc.in, p, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "principal") {
			t.Errorf("%q: %v, want ErrInvalid mentioning %q", tc.in, err, tc.err)
		}
	}
}

func TestModes(t *testing.T) {
	for s, want := range map[string]AuthMode{"none": AuthNone, "optional": AuthOptional, "required": AuthRequired} {
		if m, err := ParseAuthMode(s); err != nil || m != want || m.String() != s {
			t.Errorf("--auth %s: %v, %v", s, m, err)
		}
	}
	if _, err := ParseAuthMode("yes"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `--auth "yes"`) {
		t.Errorf("--auth yes: %v", err)
	}
	if m, err := ParseAuthzMode("on"); err != nil || m != AuthzOn {
		t.Error(m, err)
	}
	if _, err := ParseAuthzMode("true"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `--authz "true"`) {
		t.Errorf("--authz true: %v", err)
	}
	admit := []struct {
		m    AuthMode
		p    Principal
		want Principal
		err  error
	}{
		{AuthNone, alice, Anonymous, nil},
		{AuthOptional, alice, alice, nil},
		{AuthOptional, Principal{}, Anonymous, nil},
		{AuthRequired, alice, alice, nil},
		{AuthRequired, Principal{}, Principal{}, ErrUnauthenticated},
	}
	for _, tc := range admit {
		if p, err := tc.m.Admit(tc.p); p != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%v admits %v as %v, %v", tc.m, tc.p, p, err)
		}
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers(" User:admin, User:ops ")
	if err != nil || len(got) != 2 || got[0] != User("admin") || got[1] != User("ops") {
		t.Errorf("%v, %v", got, err)
	}
	if got, err := ParseSuperUsers(""); err != nil || got != nil {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"User:admin,admin", "User:*", "User:a,,User:b"} {
		if _, err := ParseSuperUsers(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--super-users") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestCertificatePrincipalNeedsAVerifiedChain(t *testing.T) {
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}}
	if p, ok := CertificatePrincipal(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}); ok {
		t.Errorf("an unverified certificate named %v", p)
	}
	verified := tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}
	if p, ok := CertificatePrincipal(verified); !ok || p != alice {
		t.Errorf("verified: %v %v", p, ok)
	}
	for _, cn := range []string{"", "*", "ANONYMOUS", "a,b"} {
		cert.Subject.CommonName = cn
		if p, ok := CertificatePrincipal(verified); ok {
			t.Errorf("CN %q named %v", cn, p)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestNonLoopback(t *testing.T) {
	got := NonLoopback("127.0.0.1:7070", "localhost:9092", "[::1]:7071", "127.0.0.2:1", ":7070", "0.0.0.0:9092", "10.0.0.5:7070", "node1.example:7070")
	want := []string{":7070", "0.0.0.0:9092", "10.0.0.5:7070", "node1.example:7070"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("NonLoopback = %v, want %v", got, want)
	}
}

// An ACL's text form reads as a filter, unset fields matching anything,
// and as a whole ACL, which every field must set; the error names the
// first field that does not parse.
func TestACLText(t *testing.T) {
	text := ACLText{Principal: "User:alice", Permission: "allow", Operation: "READ", ResourceType: "topic",
		PatternType: "prefixed", Name: "logs."}
	want := ACL{Principal: alice, Permission: Allow, Operation: OpRead, ResourceType: ResourceTopic,
		PatternType: PatternPrefixed, Name: "logs."}
	if a, err := text.ACL(); err != nil || a != want {
		t.Fatalf("ACL: %v, %v; want %v", a, err, want)
	}
	if f, err := text.Filter(); err != nil || f != ExactFilter(want) {
		t.Fatalf("Filter: %+v, %v; want the exact filter of %v", f, err, want)
	}
	if f, err := (ACLText{Operation: "write"}).Filter(); err != nil || f != (ACLFilter{Operation: OpWrite}) {
		t.Fatalf("a filter of one field: %+v, %v", f, err)
	}
	if _, err := (ACLText{Operation: "write"}).ACL(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an ACL of one field: %v, want ErrInvalid", err)
	}
	bad := text
	bad.Permission, bad.Operation = "maybe", "peek"
	if _, err := bad.Filter(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `permission "maybe"`) {
		t.Fatalf("two bad fields: %v, want the permission's error", err)
	}
}
