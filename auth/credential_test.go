package auth

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenCredentials are made from fixed salts, so their encoding is fixed.
func goldenCredentials(t *testing.T) Credentials {
	t.Helper()
	var c Credentials
	for i, m := range ScramMechanisms {
		sc, err := deriveCredential(m, "pencil", bytes.Repeat([]byte{byte(i + 1)}, 16), 4096)
		if err != nil {
			t.Fatal(err)
		}
		c.Scram = append(c.Scram, sc)
	}
	return c
}

// The version 1 encoding is stored in the cluster metadata: a change to it
// must be a new version, not a silent edit. The golden file pins it.
func TestCredentialsEncodingGolden(t *testing.T) {
	b, err := goldenCredentials(t).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	const path = "testdata/credentials-v1.hex"
	if *update {
		if err := os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := hex.DecodeString(strings.TrimSpace(string(want)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, golden) {
		t.Fatalf("encoding changed:\n got %x\nwant %x", b, golden)
	}
	c, err := DecodeCredentials(golden)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ScramMechanisms {
		sc, _ := c.For(m)
		if !sc.matches("pencil") || sc.matches("pen") {
			t.Errorf("%s from the golden file does not check the password", m)
		}
	}
}

func TestDecodeCredentialsRefusesCorruption(t *testing.T) {
	good, err := goldenCredentials(t).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := map[string][]byte{
		"empty":              nil,
		"version 2":          edit(func(b []byte) []byte { b[0] = 2; return b }),
		"count 0":            edit(func(b []byte) []byte { b[1] = 0; return b }),
		"count 3":            edit(func(b []byte) []byte { b[1] = 3; return b }),
		"unknown mechanism":  edit(func(b []byte) []byte { b[2] = 9; return b }),
		"too few iterations": edit(func(b []byte) []byte { b[5], b[6] = 0, 1; return b }),
		"short salt":         edit(func(b []byte) []byte { b[7] = 3; return b }),
		"truncated":          good[:len(good)-1],
		"trailing byte":      append(append([]byte(nil), good...), 0),
		"same mechanism twice": edit(func(b []byte) []byte {
			b[1] = 2
			one := b[2 : 2+6+16+64]
			return append(b[:2+len(one)], one...)
		}),
	}
	for name, b := range cases {
		if _, err := DecodeCredentials(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func TestNewCredentialsRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		password string
		iters    int
	}{{"", 4096}, {strings.Repeat("x", 1025), 4096}, {"pw", 1000}, {"pw", MaxIterations + 1}} {
		if _, err := NewCredentials(tc.password, tc.iters); !errors.Is(err, ErrInvalid) {
			t.Errorf("password of %d bytes, %d iterations: %v", len(tc.password), tc.iters, err)
		}
	}
}

func TestMemoryCredentialStore(t *testing.T) {
	s := NewMemoryCredentialStore()
	putUser(t, s, "bob", "b")
	putUser(t, s, "alice", "a")
	if users, _ := s.Users(); strings.Join(users, ",") != "alice,bob" {
		t.Errorf("users %v", users)
	}
	if err := s.Put("*", goldenCredentials(t)); !errors.Is(err, ErrInvalid) {
		t.Errorf("user *: %v", err)
	}
	if err := s.Delete("carol"); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("delete unknown: %v", err)
	}
	if _, err := s.Lookup("carol"); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("lookup unknown: %v", err)
	}
}

func FuzzDecodeCredentials(f *testing.F) {
	for _, i := range []int{0, 1} {
		sc, err := deriveCredential(ScramMechanisms[i], "pencil", bytes.Repeat([]byte{1}, 16), 4096)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := Credentials{Scram: []ScramCredential{sc}}.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{1, 1, 1, 0, 0, 16, 0, 16})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCredentials(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		// What decodes encodes back to the same bytes: one encoding per value.
		again, err := c.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %x gave %x, %v", b, again, err)
		}
	})
}
