package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestConsoleOriginsOfTheCluster: a node's live tail lets the console of
// another member of the cluster read it (its exact origin, with
// credentials), and no other origin; the console's CSP lets it connect
// to the members' HTTP addresses and nowhere else. The fake cluster's
// members are 127.0.0.1:1 (this node), 127.0.0.1:2 and 0.0.0.0:3 (an
// address no browser names).
func TestConsoleOriginsOfTheCluster(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	srv, _ := serveGuarded(t, f, Config{}, []string{"https://ops.example.com"})
	for _, c := range []struct {
		origin      string
		allow, cred bool
	}{
		{"http://127.0.0.1:2", true, true},
		{"HTTP://127.0.0.1:2", true, true},
		{"http://127.0.0.1:1", true, true},
		{"http://127.0.0.1:4", false, false},
		{"https://127.0.0.1:2", false, false}, // this node serves http
		{"http://0.0.0.0:3", false, false},
		{"http://localhost:2", false, false},
		{"null", false, false},
		{"https://ops.example.com", true, false}, // --http-allowed-origins: no credentials
	} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/topics/t/events", nil)
		req.Header.Set("Origin", c.origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		acao, acac := resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Credentials")
		resp.Body.Close()
		cancel()
		if (acao == c.origin) != c.allow || (acao != "" && acao != c.origin) || (acac == "true") != c.cred {
			t.Errorf("Origin %s: Access-Control-Allow-Origin %q, -Credentials %q; want allowed %v, credentials %v", c.origin, acao, acac, c.allow, c.cred)
		}
		if vary := resp.Header.Values("Vary"); strings.Count(strings.Join(vary, ","), "Origin") != 1 {
			t.Errorf("Origin %s: Vary %q, want Origin once", c.origin, vary)
		}
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "connect-src 'self' 127.0.0.1:1 127.0.0.1:2;") {
		t.Fatalf("the console's CSP is %q, want connect-src 'self' and the members 127.0.0.1:1 and 127.0.0.1:2 only", csp)
	}
}

func TestConsoleHostPort(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:7071": "127.0.0.1:7071", "Node-1.example.com:80": "node-1.example.com:80",
		"0.0.0.0:7071": "", "[::]:7071": "", "[::1]:7071": "", "": "", "127.0.0.1": "",
		"a b:1": "", "a;b:1": "", "host:x1": "", "host:": "",
	} {
		got, ok := consoleHostPort(addr)
		if got != want || ok != (want != "") {
			t.Errorf("consoleHostPort(%q) = %q, %v; want %q", addr, got, ok, want)
		}
	}
}
