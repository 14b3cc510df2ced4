package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rawPost sends a produce request with exactly these headers (no default
// Content-Type) and returns the status and the JSON error.
func rawPost(t *testing.T, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb errorBody
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("POST %s: %d with Content-Type %q: %s", url, resp.StatusCode, ct, b)
		}
		if err := json.Unmarshal(b, &eb); err != nil || eb.Error == "" {
			t.Fatalf("POST %s: %d without a JSON error: %s", url, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, eb.Error
}

// stored is the fake topic's record count over all partitions.
func stored(f *fakeCore, topic string) int64 {
	t, _ := f.TopicLayout(context.Background(), "", topic)
	var n int64
	for _, p := range t.Partitions {
		n += p.HighWatermark - p.LogStart
	}
	return n
}

// TestCrossOriginWritesRefused: a page of another site cannot produce
// through a visitor's browser (a text/plain POST needs no CORS
// preflight), whatever its content type, unless --http-allowed-origins
// names it; the console's own requests, curl and allowed origins pass.
func TestCrossOriginWritesRefused(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 2)
	srv, _ := serveGuarded(t, f, Config{}, []string{"HTTPS://Ops.Example.com:443/"})
	url := srv.URL + "/v1/topics/t/records"
	body := `{"records": [{"value": "x"}]}`
	refused := []map[string]string{
		{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Content-Type": "application/json", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Content-Type": "application/json", "Origin": "https://evil.example"}, // a browser without Sec-Fetch-Site
		{"Content-Type": "application/json", "Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"},
		{"Content-Type": "application/json", "Origin": "null", "Sec-Fetch-Site": "cross-site"},
		{"Content-Type": "application/json", "Origin": "null"},
		{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
		{"Content-Type": "application/json", "Origin": "http://ops.example.com", "Sec-Fetch-Site": "cross-site"}, // http, not https
	}
	for _, hdr := range refused {
		st, msg := rawPost(t, url, body, hdr)
		if st != http.StatusForbidden || !strings.Contains(msg, "--http-allowed-origins") {
			t.Errorf("%v: %d %q, want 403 naming --http-allowed-origins", hdr, st, msg)
		}
	}
	if n := stored(f, "t"); n != 0 {
		t.Fatalf("refused requests stored %d records", n)
	}
	allowed := []map[string]string{
		{"Content-Type": "application/json"},                                                     // curl, scripts
		{"Content-Type": "application/json", "Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}, // the console
		{"Content-Type": "application/json", "Origin": srv.URL},                                  // an older browser, same origin
		{"Content-Type": "application/json", "Origin": "http://localhost:1", "Host": "localhost:1"},
		{"Content-Type": "application/json", "Origin": "https://ops.example.com", "Sec-Fetch-Site": "cross-site"},
		{"Content-Type": "application/json", "Origin": "https://OPS.example.com:443", "Sec-Fetch-Site": "same-site"},
		{"Content-Type": "application/json", "Sec-Fetch-Site": "none"}, // typed by the user
	}
	for _, hdr := range allowed {
		if st, msg := rawPost(t, url, body, hdr); st != http.StatusOK {
			t.Errorf("%v: %d %q, want 200", hdr, st, msg)
		}
	}
	if n := stored(f, "t"); n != int64(len(allowed)) {
		t.Fatalf("%d records stored, want %d", n, len(allowed))
	}
	// Reads are not refused: without CORS headers the browser does not
	// let the other page see the answer.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/topics", nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("cross-site GET: %d, Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

// TestProduceNeedsJSONContentType: a body that is not declared JSON is
// refused with 415 and what to send, and nothing is written.
func TestProduceNeedsJSONContentType(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	srv, _ := serve(t, f, Config{})
	url := srv.URL + "/v1/topics/t/records"
	body := `{"records": [{"value": "x"}]}`
	for _, ct := range []string{"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/json; charset=latin1", "application/jsonx", "text/json+x", "application/json;;"} {
		hdr := map[string]string{}
		if ct != "" {
			hdr["Content-Type"] = ct
		}
		st, msg := rawPost(t, url, body, hdr)
		if st != http.StatusUnsupportedMediaType || !strings.Contains(msg, "application/json") && !strings.Contains(msg, "UTF-8") {
			t.Errorf("Content-Type %q: %d %q, want 415 saying what to send", ct, st, msg)
		}
	}
	if n := stored(f, "t"); n != 0 {
		t.Fatalf("refused requests stored %d records", n)
	}
	for _, ct := range []string{"application/json", "Application/JSON; charset=utf-8", "application/vnd.logd.records+json"} {
		if st, msg := rawPost(t, url, body, map[string]string{"Content-Type": ct}); st != http.StatusOK {
			t.Errorf("Content-Type %q: %d %q, want 200", ct, st, msg)
		}
	}
}

// TestProduceRefusesInvalidUTF8: text that is not UTF-8, or escapes half a
// surrogate pair, is refused with 400 (it would be stored as U+FFFD), and
// nothing is written; a valid pair is stored as its UTF-8 bytes.
func TestProduceRefusesInvalidUTF8(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	srv, _ := serve(t, f, Config{})
	url := srv.URL + "/v1/topics/t/records"
	jsonCT := map[string]string{"Content-Type": "application/json"}
	for _, body := range []string{
		"{\"records\": [{\"value\": \"a\xffb\"}]}",
		"{\"records\": [{\"value\": \"ok\"}, {\"key\": \"\xc3\"}]}",
		"{\"records\": [{\"value\": \"v\", \"headers\": {\"h\xfe\": \"x\"}}]}",
		"{\"records\": [{\"value\": \"\xed\xa0\x80\"}]}", // a surrogate encoded in UTF-8
		`{"records": [{"value": "\ud800"}]}`,
		`{"records": [{"value": "\udc00\ud800"}]}`,
		`{"records": [{"value": "\ud800\u0041"}]}`,
		`{"records": [{"value": "x", "headers": {"h": "\uDBFF"}}]}`,
	} {
		st, msg := rawPost(t, url, body, jsonCT)
		if st != http.StatusBadRequest || !strings.Contains(msg, "UTF-8") || !strings.Contains(msg, "base64") {
			t.Errorf("%q: %d %q, want 400 saying UTF-8 and base64", body, st, msg)
		}
	}
	if n := stored(f, "t"); n != 0 {
		t.Fatalf("refused requests stored %d records", n)
	}
	if st, msg := rawPost(t, url, `{"records": [{"value": "\ud83d\ude00 \\ud800 \u00e9"}]}`, jsonCT); st != http.StatusOK {
		t.Fatalf("valid escapes: %d %q", st, msg)
	}
	var rr readResp
	do(t, "GET", srv.URL+"/v1/topics/t/records?partition=0", "", nil, &rr)
	if len(rr.Records) != 1 || *rr.Records[0].Value != "\U0001F600 \\ud800 é" {
		t.Fatalf("stored %+v", rr.Records)
	}
}

// TestLoopbackServesOnlyLocalHosts: bound to loopback, the port answers
// only loopback Host names and the allowed origins' hosts, so a
// DNS-rebinding page (its own name resolving to 127.0.0.1) reads nothing;
// bound to another address it answers any Host.
func TestLoopbackServesOnlyLocalHosts(t *testing.T) {
	f := newFakeCore()
	f.addTopic("secret", 1)
	srv, _ := serveGuarded(t, f, Config{}, []string{"https://logd.example.com"})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	get := func(host, path string) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"rebind.evil.example:" + port, "rebind.evil.example", "127.0.0.1.evil.example:" + port,
		"localhost.evil.example", "10.0.0.1:" + port, "logd.example.com.evil.example"} {
		for _, path := range []string{"/v1/topics", "/v1/topics/secret/records?partition=0", "/"} {
			st, body := get(host, path)
			if st != http.StatusForbidden || !strings.Contains(body, "DNS rebinding") || strings.Contains(body, `"secret"`) {
				t.Errorf("Host %s %s: %d %s, want 403 naming DNS rebinding", host, path, st, body)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "localhost.:8080", "[::1]:" + port,
		"[::1]", "127.0.0.2:9", "logd.example.com", "Logd.Example.Com:443"} {
		if st, body := get(host, "/v1/topics"); st != http.StatusOK || !strings.Contains(body, "secret") {
			t.Errorf("Host %s: %d %s, want 200", host, st, body)
		}
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	for _, c := range []struct {
		listen, path string
		want         int
	}{
		{"127.0.0.1:7071", "/healthz", 200}, // probes name the host as they like
		{"127.0.0.1:7071", "/readyz", 200},
		{"127.0.0.1:7071", "/metrics", 403}, // names every topic
		{"[::1]:7071", "/v1/topics", 403},
		{"0.0.0.0:7071", "/v1/topics", 200}, // any interface: names are the operator's
		{"192.0.2.7:7071", "/v1/topics", 200},
	} {
		g, err := NewGuard(GuardConfig{ListenAddr: c.listen})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		g.Wrap(ok).ServeHTTP(rec, httptest.NewRequest("GET", "http://rebind.evil.example:7071"+c.path, nil))
		if rec.Code != c.want {
			t.Errorf("bound to %s, GET %s as rebind.evil.example: %d, want %d", c.listen, c.path, rec.Code, c.want)
		}
	}
}

// TestNoFraming: every answer forbids framing (the console's produce form
// must not be clickjacked), the console keeping its own policy.
func TestNoFraming(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	srv, _ := serve(t, f, Config{})
	for _, path := range []string{"/", "/app.js", "/v1/topics", "/v1/nothing", "/v1/topics/t/records?offset=x"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: X-Frame-Options %q, Content-Security-Policy %q", path, resp.Header.Get("X-Frame-Options"), csp)
		}
		if (path == "/" || path == "/app.js") && !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: the console's policy was lost: %q", path, csp)
		}
	}
	// The console's handler forbids framing on its own too.
	rec := httptest.NewRecorder()
	New(f, Config{}).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Header().Get("X-Frame-Options") != "DENY" || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("console without the guard: %v", rec.Header())
	}
}

// TestAllowedOriginsChecked: --http-allowed-origins takes origins only,
// and says the form it wants.
func TestAllowedOriginsChecked(t *testing.T) {
	for _, o := range []string{"ops.example.com", "ftp://ops.example.com", "https://ops.example.com/console", "*",
		"https://", "https://ops.example.com?x", "https://user@ops.example.com", "null"} {
		if _, err := NewGuard(GuardConfig{AllowedOrigins: []string{o}}); err == nil || !strings.Contains(err.Error(), "--http-allowed-origins") ||
			!strings.Contains(err.Error(), "scheme://host[:port]") {
			t.Errorf("%q: %v, want an error saying the form", o, err)
		}
	}
	for in, want := range map[string]string{"HTTPS://Ops.Example.com:443/": "https://ops.example.com",
		"http://ops.example.com:80": "http://ops.example.com", "http://[::1]:8080": "http://[::1]:8080",
		" https://ops.example.com:8443 ": "https://ops.example.com:8443"} {
		if got, _, err := parseOrigin(in); err != nil || got != want {
			t.Errorf("parseOrigin(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
}

// TestConsoleUnopenablePath: a path the console's file system cannot open
// (not UTF-8) is 404, not the file server's 500.
func TestConsoleUnopenablePath(t *testing.T) {
	srv, _ := serve(t, newFakeCore(), Config{})
	var eb errorBody
	if st := do(t, "GET", srv.URL+"/%84", "", nil, &eb); st != http.StatusNotFound || !strings.Contains(eb.Error, "console") {
		t.Fatalf("GET /%%84: %d %q", st, eb.Error)
	}
}

// TestAllowedOriginCORS: a page of an allowed origin may call the API with
// fetch (its preflight is answered, before authentication; its answers
// name it in Access-Control-Allow-Origin); no other origin gets CORS
// headers.
func TestAllowedOriginCORS(t *testing.T) {
	f := newFakeCore()
	f.addTopic("t", 1)
	srv, _ := serveGuarded(t, f, Config{}, []string{"https://ops.example.com"})
	send := func(method, path, origin string, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(hdr["body"]))
		req.Header.Set("Origin", origin)
		for k, v := range hdr {
			if k != "body" {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	pre := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,idempotency-key",
		"Sec-Fetch-Site": "cross-site"}
	resp := send("OPTIONS", "/v1/topics/t/records", "https://ops.example.com", pre)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://ops.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Idempotency-Key") {
		t.Fatalf("preflight of the allowed origin: %d %v", resp.StatusCode, resp.Header)
	}
	resp = send("POST", "/v1/topics/t/records", "https://ops.example.com", map[string]string{"Content-Type": "application/json",
		"Sec-Fetch-Site": "cross-site", "body": `{"records": [{"value": "x"}]}`})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://ops.example.com" {
		t.Fatalf("POST from the allowed origin: %d %v", resp.StatusCode, resp.Header)
	}
	for _, r := range []*http.Response{
		send("OPTIONS", "/v1/topics/t/records", "https://evil.example", pre),
		send("GET", "/v1/topics", "https://evil.example", map[string]string{"Sec-Fetch-Site": "cross-site"}),
	} {
		if r.StatusCode == http.StatusNoContent || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%s from another origin: %d %v", r.Request.Method, r.StatusCode, r.Header)
		}
	}
}
