package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// env is a core to test the handler over: the fake, or a real broker
// (e2e_test.go).
type env interface {
	core() Core
	createTopic(t *testing.T, name string, partitions int)
}

type fakeEnv struct{ f *fakeCore }

func (e fakeEnv) core() Core { return e.f }
func (e fakeEnv) createTopic(t *testing.T, name string, n int) {
	e.f.addTopic(name, n)
}

func newFakeEnv(*testing.T) env { return fakeEnv{newFakeCore()} }

// serve starts the handler on 127.0.0.1, behind the Guard as a node
// serves it, and stops it at the test's end.
func serve(t *testing.T, c Core, cfg Config) (*httptest.Server, *Handler) {
	t.Helper()
	return serveGuarded(t, c, cfg, nil)
}

// serveGuarded is serve with these --http-allowed-origins.
func serveGuarded(t *testing.T, c Core, cfg Config, origins []string) (*httptest.Server, *Handler) {
	t.Helper()
	h := New(c, cfg)
	srv := httptest.NewUnstartedServer(nil)
	g, err := NewGuard(GuardConfig{AllowedOrigins: origins, ListenAddr: srv.Listener.Addr().String()})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	srv.Config.Handler = g.Wrap(h)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, h
}

// do sends a request and decodes the JSON answer into out (when not nil).
// A body is sent as application/json unless hdr names a Content-Type.
func do(t *testing.T, method, url string, body string, hdr map[string]string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q, body %s", method, url, ct, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

// sseEvent is one event read from a stream; comment is a ":" line.
type sseEvent struct {
	name, id, data, comment string
}

// sseStream reads events from an open event stream.
type sseStream struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// openEvents connects to a topic's events; lastID is sent as Last-Event-ID
// when not empty.
func openEvents(t *testing.T, url, lastID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 1024), cancel: cancel}
	go s.read()
	t.Cleanup(s.close)
	return s
}

func (s *sseStream) read() {
	defer close(s.events)
	sc := bufio.NewScanner(s.resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				s.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.comment = line
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			ev.id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[len("data: "):]
		}
	}
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
	for range s.events {
	}
}

// next returns the next event of the given name (others are skipped).
func (s *sseStream) next(t *testing.T, name string, timeout time.Duration) sseEvent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("stream ended waiting for a %q event", name)
			}
			if ev.name == name || (name == "" && ev.name == "" && ev.comment == "") {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %q event within %s", name, timeout)
		}
	}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
