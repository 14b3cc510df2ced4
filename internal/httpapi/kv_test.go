package httpapi

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
)

// kvEnv is a real broker with the compacted topic cfg of 2 partitions and
// the plain topic plain, served over HTTP through AnyNode.
func kvEnv(t *testing.T) string {
	t.Helper()
	e := newBrokerEnv(t).(brokerEnv)
	cfg := broker.DefaultConfig("cfg")
	cfg.Partitions = 2
	cfg.Cleanup = broker.DefaultCleanup()
	cfg.Cleanup.Policy = broker.CleanupCompact
	if _, err := e.b.CreateTopic(context.Background(), "", cfg); err != nil {
		t.Fatal(err)
	}
	e.createTopic(t, "plain", 1)
	srv, _ := serve(t, e.b.AnyNode(), Config{})
	return srv.URL
}

// kvDo makes a request and returns its status, ETag and body.
func kvDo(t *testing.T, method, url, body string, hdr ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), string(b)
}

func TestE2EKeyValue(t *testing.T) {
	base := kvEnv(t)
	key := base + "/v1/topics/cfg/keys/app/db.url"
	st, etag, body := kvDo(t, "PUT", key, "postgres://a")
	if st != 200 || etag == "" {
		t.Fatalf("PUT: %d %q %s", st, etag, body)
	}
	st, got, body := kvDo(t, "GET", key, "")
	var rec recordJSON
	if err := json.Unmarshal([]byte(body), &rec); st != 200 || err != nil || rec.Value == nil || *rec.Value != "postgres://a" || got != etag {
		t.Fatalf("GET: %d etag %q (put's %q) %s", st, got, etag, body)
	}
	// Compare-and-set on the ETag: the first wins, the second is refused.
	st, etag2, body := kvDo(t, "PUT", key, "postgres://b", "If-Match", etag)
	if st != 200 {
		t.Fatalf("PUT If-Match %s: %d %s", etag, st, body)
	}
	st, _, body = kvDo(t, "PUT", key, "postgres://c", "If-Match", etag)
	if st != http.StatusPreconditionFailed || !strings.Contains(body, "the key's latest offset is "+strings.Trim(etag2, `"`)) {
		t.Fatalf("PUT with a stale If-Match: %d %s, want 412 naming the latest offset", st, body)
	}
	if st, _, body = kvDo(t, "PUT", key, "x", "If-None-Match", "*"); st != http.StatusPreconditionFailed {
		t.Fatalf("PUT If-None-Match * of a key with a value: %d %s", st, body)
	}
	if st, _, body = kvDo(t, "PUT", base+"/v1/topics/cfg/keys/app/new", "n", "If-None-Match", "*"); st != 200 {
		t.Fatalf("PUT If-None-Match * of a new key: %d %s", st, body)
	}
	if st, _, body = kvDo(t, "PUT", key, "x", "If-Match", "soon"); st != http.StatusBadRequest {
		t.Fatalf("PUT If-Match soon: %d %s", st, body)
	}
	kvDo(t, "PUT", base+"/v1/topics/cfg/keys/other", "o")
	st, _, body = kvDo(t, "GET", base+"/v1/topics/cfg/keys?prefix=app/", "")
	var page kvListJSON
	if err := json.Unmarshal([]byte(body), &page); st != 200 || err != nil || len(page.Records) != 2 ||
		*page.Records[0].Key != "app/db.url" || *page.Records[0].Value != "postgres://b" || *page.Records[1].Key != "app/new" {
		t.Fatalf("list app/: %d %s", st, body)
	}
	if st, _, body = kvDo(t, "DELETE", key, ""); st != 200 {
		t.Fatalf("DELETE: %d %s", st, body)
	}
	if st, _, body = kvDo(t, "GET", key, ""); st != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d %s", st, body)
	}
	if st, _, body = kvDo(t, "GET", base+"/v1/topics/plain/keys/k", ""); st != http.StatusConflict || !strings.Contains(body, "not compacted") {
		t.Fatalf("GET on a delete topic: %d %s", st, body)
	}
	if st, _, body = kvDo(t, "GET", base+"/v1/topics/cfg/keys?limit=many", ""); st != http.StatusBadRequest {
		t.Fatalf("list limit=many: %d %s", st, body)
	}
}

// The watch streams each put and delete of the keys with its prefix made
// after it began, and nothing of other keys.
func TestE2EKeyValueWatch(t *testing.T) {
	base := kvEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/topics/cfg/keys?watch=true&prefix=app/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("watch: %d %s", resp.StatusCode, ct)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || lines.Text() != ": watching" {
		t.Fatalf("first line %q, want the watch's start", lines.Text())
	}
	events := make(chan string, 100)
	go func() {
		defer close(events)
		for lines.Scan() {
			if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var r recordJSON
				if err := json.Unmarshal([]byte(d), &r); err != nil {
					return
				}
				v := "<deleted>"
				if r.Value != nil {
					v = *r.Value
				}
				events <- *r.Key + "=" + v
			}
		}
	}()
	// The watch starts at the end of the log once it has looked it up:
	// probe until it sees a put.
	for seen := false; !seen; {
		kvDo(t, "PUT", base+"/v1/topics/cfg/keys/app/probe", "p")
		select {
		case _, ok := <-events:
			if !ok {
				t.Fatal("the watch ended")
			}
			seen = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	kvDo(t, "PUT", base+"/v1/topics/cfg/keys/other", "o")
	kvDo(t, "PUT", base+"/v1/topics/cfg/keys/app/k", "v1")
	kvDo(t, "DELETE", base+"/v1/topics/cfg/keys/app/k", "")
	var seen []string
	for len(seen) < 2 {
		switch e, ok := <-events; {
		case !ok:
			t.Fatal("the watch ended")
		case e == "app/probe=p":
		case strings.HasPrefix(e, "other"):
			t.Fatalf("the watch of app/ sent %s", e)
		default:
			seen = append(seen, e)
		}
	}
	if strings.Join(seen, " ") != "app/k=v1 app/k=<deleted>" {
		t.Fatalf("events %v", seen)
	}
}
