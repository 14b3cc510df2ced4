package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logd/logd/broker"
	"github.com/logd/logd/internal/node"
	"github.com/logd/logd/internal/node/nodetest"
	"github.com/logd/logd/partition"
)

// httpDo sends one request on a connection of its own and returns the
// status, headers and body.
func httpDo(t *testing.T, method, url, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestHTTPProbesPastConnectionCap: live tails on a quiet topic fill
// --max-http-connections and hold it; /healthz, /readyz and /metrics are
// still answered (one request per connection of the probes' reserve), the
// API is refused with 503 and what to do, and is served again once the
// tails close.
func TestHTTPProbesPastConnectionCap(t *testing.T) {
	const maxConns = 3
	s := nodetest.Start(t, func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.MaxHTTPConnections = maxConns
	})
	if _, err := s.Broker().CreateTopic(ctx(t), "", partition.DefaultConfig("quiet")); err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.HTTPAddr()
	var cancels []context.CancelFunc
	closeTails := func() {
		for _, c := range cancels {
			c()
		}
		cancels = nil
	}
	defer closeTails()
	for range maxConns {
		c, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		req, _ := http.NewRequestWithContext(c, "GET", base+"/v1/topics/quiet/events", nil)
		hc := &http.Client{Transport: &http.Transport{}}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("live tail: %d", resp.StatusCode)
		}
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // the stream is being served
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/healthz"} {
		resp, err := http.Get(base + path) // a client that would keep the connection
		if err != nil {
			t.Fatalf("GET %s with the HTTP cap full of live tails: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s with the HTTP cap full of live tails: %d", path, resp.StatusCode)
		}
		if !resp.Close {
			t.Errorf("GET %s in the reserve: the connection is kept, want Connection: close", path)
		}
	}
	st, _, body := httpDo(t, "GET", base+"/v1/topics", "", nil)
	var e struct{ Error string }
	json.Unmarshal([]byte(body), &e)
	if st != http.StatusServiceUnavailable || !strings.Contains(e.Error, "--max-http-connections") {
		t.Fatalf("GET /v1/topics with the cap full: %d %s, want 503 naming --max-http-connections", st, body)
	}
	closeTails()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _, body := httpDo(t, "GET", base+"/v1/topics", "", nil)
		if st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/topics after the tails closed: %d %s", st, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHTTPPortGuard: the node's HTTP port is behind the browser guard:
// bound to loopback it answers no foreign Host (/metrics included, the
// probes excepted), a cross-site text/plain produce stores nothing, an
// origin named by HTTPAllowedOrigins may produce, and no answer may be
// framed.
func TestHTTPPortGuard(t *testing.T) {
	s := nodetest.Start(t, func(c *node.Config) {
		c.HTTPAddr = "127.0.0.1:0"
		c.HTTPAllowedOrigins = []string{"https://ops.example.com"}
	})
	if _, err := s.Broker().CreateTopic(ctx(t), "", partition.DefaultConfig("t")); err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.HTTPAddr()
	rebind := map[string]string{"Host": "rebind.evil.example:7071"}
	for path, want := range map[string]int{"/metrics": 403, "/v1/topics": 403, "/": 403, "/healthz": 200, "/readyz": 200} {
		st, h, body := httpDo(t, "GET", base+path, "", rebind)
		if st != want {
			t.Errorf("GET %s as rebind.evil.example: %d %s, want %d", path, st, body, want)
		}
		if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("GET %s: may be framed: %v", path, h)
		}
	}
	post := base + "/v1/topics/t/records"
	rec := `{"records": [{"value": "x"}]}`
	if st, _, body := httpDo(t, "POST", post, rec, map[string]string{"Content-Type": "text/plain",
		"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); st != http.StatusForbidden || !strings.Contains(body, "--http-allowed-origins") {
		t.Fatalf("cross-site text/plain produce: %d %s", st, body)
	}
	if st, _, body := httpDo(t, "POST", post, rec, map[string]string{"Content-Type": "text/plain"}); st != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain produce: %d %s", st, body)
	}
	if st, _, body := httpDo(t, "POST", post, rec, map[string]string{"Content-Type": "application/json",
		"Origin": "https://ops.example.com", "Sec-Fetch-Site": "cross-site"}); st != http.StatusOK {
		t.Fatalf("produce from an allowed origin: %d %s", st, body)
	}
	if _, _, body := httpDo(t, "GET", base+"/v1/topics/t/records", "", nil); strings.Count(body, `"offset"`) != 1 {
		t.Fatalf("want exactly the allowed origin's record stored: %s", body)
	}
	_, err := node.Start(node.Config{Config: broker.Config{DataDir: t.TempDir()}, Addr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", HTTPAllowedOrigins: []string{"ops.example.com"}})
	if err == nil || !strings.Contains(err.Error(), "--http-allowed-origins") {
		t.Fatalf("Start with an origin without scheme: %v", err)
	}
}
