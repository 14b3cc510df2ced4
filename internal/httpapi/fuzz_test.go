package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzDecodeProduceBody: any body decodes or fails with errBadBody, never
// panics, and an accepted body is UTF-8 and its records are within the
// limits, their strings the exact bytes sent (no U+FFFD put in).
func FuzzDecodeProduceBody(f *testing.F) {
	for _, s := range []string{
		`{"records": [{"key": "k", "value": "v", "headers": {"h": "x"}, "partition": 1}]}`,
		`{"records": [{"value": {"base64": "AAE="}}, {"key": null, "value": null}]}`,
		`{"records": [`, `{"records": {}}`, `{}`, `null`, `[]`, `{"records": [{"value": {"base64": 1}}]}`,
		`{"records": [{"headers": {"a": null}}]}`, `{"records": [{"partition": -1}]} x`,
		"{\"records\": [{\"value\": \"\xff\"}]}", `{"records": [{"value": "\ud800"}]}`, `{"records": [{"key": "\ud83d\ude00"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		b, err := decodeProduceBody(strings.NewReader(body))
		if err != nil {
			if !errors.Is(err, errBadBody) {
				t.Fatalf("error %v does not wrap errBadBody", err)
			}
			return
		}
		if len(b.Records) == 0 || len(b.Records) > maxRecordsPerRequest {
			t.Fatalf("accepted %d records", len(b.Records))
		}
		if !utf8.ValidString(body) {
			t.Fatalf("accepted a body that is not UTF-8: %q", body)
		}
		for _, r := range b.Records {
			for _, f := range []bytesField{r.Key, r.Value} {
				// A base64 value may hold U+FFFD's bytes; an escape may name it.
				if bytes.ContainsRune(f.b, utf8.RuneError) && !strings.Contains(body, "base64") &&
					!strings.Contains(strings.ToLower(body), `\ufffd`) && !strings.ContainsRune(body, utf8.RuneError) {
					t.Fatalf("a replacement character appeared in %q from %q", f.b, body)
				}
			}
			if r.Partition != nil && *r.Partition < 0 {
				t.Fatalf("accepted partition %d", *r.Partition)
			}
		}
	})
}

// FuzzParsePosition: any event id parses or fails, never panics, and a
// parsed one formats back to an id that parses to the same position.
func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{"0:1", "0:42,1:17,2:9", "", "0:1,0:2", "x", "1:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		m, err := parsePosition(id)
		if err != nil {
			return
		}
		var p position
		p.parts = slices.Sorted(maps.Keys(m))
		for _, part := range p.parts {
			p.next = append(p.next, m[part])
		}
		again, err := parsePosition(p.String())
		if err != nil || len(again) != len(m) {
			t.Fatalf("%q -> %q -> %v, %v", id, p.String(), again, err)
		}
		for k, v := range m {
			if again[k] != v {
				t.Fatalf("%q: partition %d %d became %d", id, k, v, again[k])
			}
		}
	})
}

// fuzzStatuses are the statuses the port answers: the API's table
// (docs/http.md), the console's file server (partial content, not
// modified, preconditions, ranges) and the mux's redirects of unclean
// paths. 500 is not among them: the fake core fails only in known ways.
var fuzzStatuses = map[int]bool{200: true, 201: true, 204: true, 206: true, 301: true, 304: true, 307: true, 308: true,
	400: true, 403: true, 404: true, 405: true, 409: true, 412: true, 413: true, 415: true, 416: true,
	421: true, 503: true, 504: true}

// FuzzHandler drives the whole port (guard and handler, over the fake
// core) with any method, path, headers and body: it never panics, answers
// a status from fuzzStatuses, and every API error is a JSON {"error"}.
// Headers are "Name: value" lines; a Host line sets the Host.
func FuzzHandler(f *testing.F) {
	ct := "Content-Type: application/json"
	for _, s := range []struct{ method, target, headers, body string }{
		{"POST", "/v1/topics/t/records", ct, `{"records": [{"key": "k", "value": "v", "partition": 1}]}`},
		{"POST", "/v1/topics/t/records?acks=leader", ct + "\nIdempotency-Key: k1", `{"records": [{"value": {"base64": "AAE="}}]}`},
		{"POST", "/v1/topics/t/records", "Content-Type: text/plain\nOrigin: https://evil.example\nSec-Fetch-Site: cross-site", `{"records": [{"value": "v"}]}`},
		{"POST", "/v1/topics/t/records", ct + "\nOrigin: https://ops.example.com", "{\"records\": [{\"value\": \"\xff\"}]}"},
		{"GET", "/v1/topics/t/records?partition=0&offset=0&max=5&wait=1ms", "", ""},
		{"GET", "/v1/topics/t/events?from=earliest&partition=1", "Last-Event-ID: 1:0", ""},
		{"GET", "/v1/topics/t/events?group=g", "", ""},
		{"GET", "/v1/topics", "Host: rebind.evil.example:7071", ""},
		{"GET", "/v1/groups/g", "", ""},
		{"GET", "/v1/cluster", "", ""},
		{"HEAD", "/", "Range: bytes=5-2", ""},
		{"GET", "/app.js", "If-None-Match: *", ""},
		{"DELETE", "/v1/topics/t", "", ""},
		{"POST", "/v1/topics", ct, `{"name": "u", "partitions": 2, "configs": {"cleanup.policy": "compact"}}`},
		{"PATCH", "/v1/topics/t", ct, `{"configs": {"retention.ms": null}}`},
		{"PATCH", "/v1//topics/../x", "Sec-Fetch-Site: same-site", "{}"},
		{"OPTIONS", "/v1/topics/t/records", "Origin: https://ops.example.com\nAccess-Control-Request-Method: POST", ""},
	} {
		f.Add(s.method, s.target, s.headers, []byte(s.body))
	}
	core := newFakeCore()
	core.addTopic("t", 2)
	g, err := NewGuard(GuardConfig{AllowedOrigins: []string{"https://ops.example.com"}, ListenAddr: "127.0.0.1:7071"})
	if err != nil {
		f.Fatal(err)
	}
	h := g.Wrap(New(core, Config{MaxBodyBytes: 64 << 10, Heartbeat: time.Millisecond, SendTimeout: 50 * time.Millisecond}))
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond) // ends live tails and waits
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, "http://127.0.0.1:7071"+target, bytes.NewReader(body))
		if err != nil || req.URL.Host != "127.0.0.1:7071" {
			return // not a request a server would parse
		}
		for line := range strings.SplitSeq(headers, "\n") {
			k, v, _ := strings.Cut(line, ":")
			if k = strings.TrimSpace(k); strings.EqualFold(k, "Host") {
				req.Host = strings.TrimSpace(v)
			} else if k != "" {
				req.Header.Add(k, strings.TrimSpace(v))
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if !fuzzStatuses[rec.Code] {
			t.Fatalf("%s %s: status %d: %s", method, target, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 && strings.HasPrefix(req.URL.Path, "/v1/") {
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%s %s: %d without a JSON error: %q", method, target, rec.Code, rec.Body.Bytes())
			}
		}
	})
}
