package edge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	pb "github.com/logd/logd/proto/logd/v1"
)

// TestHTTPConnectionsAtDescriptorLimit runs the server under a limit of 512
// descriptors and opens 600 keep-alive connections to its HTTP port, each
// after one API request, left idle. The HTTP port's own cap refuses those
// past it (its small reserve answers only health probes, then closes), so
// the descriptors left serve the API: a new gRPC client must be served
// meanwhile, and the HTTP port again once they close.
// (Before the HTTP port had a cap, 493 such connections took every
// descriptor and the API became unreachable.)
func TestHTTPConnectionsAtDescriptorLimit(t *testing.T) {
	const nofile, conns = 512, 600
	s := startServerWith(t, t.TempDir(), nofile, "--http-addr", "127.0.0.1:0")
	if s.http == "" {
		t.Fatal("no HTTP address in the server's log")
	}
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	served, refused := 0, 0
	for range conns {
		c, err := net.DialTimeout("tcp", s.http, 2*time.Second)
		if err != nil {
			refused++
			continue
		}
		open = append(open, c)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET /v1/topics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			refused++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			refused++ // the reserve past the cap: 503
			continue
		}
		served++
	}
	s.alive()
	t.Logf("%d HTTP connections: %d served and kept open, %d refused; the server holds %d descriptors (limit %d)",
		conns, served, refused, s.fds(), nofile)
	if refused == 0 {
		t.Errorf("all %d HTTP connections were served under a limit of %d descriptors: no cap applied", conns, nofile)
	}
	newProbe(t, s, "edge-probe").check("with the HTTP port's connections at their cap")
	for _, c := range open {
		c.Close()
	}
	open = nil
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + s.http + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HTTP port does not serve after its idle connections closed: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSilentConnectionsClosed fills --max-connections with TCP connections
// that never send a byte (not even the HTTP/2 preface). The server must
// close them after its handshake timeout, well within 30s, so that clients
// get in again. (Before, gRPC's default of 120s locked every client out.)
func TestSilentConnectionsClosed(t *testing.T) {
	const limit = 16
	s := startServerWith(t, t.TempDir(), 0, "--max-connections", fmt.Sprint(limit))
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for range limit {
		c, err := net.DialTimeout("tcp", s.addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	start := time.Now()
	closed := make(chan time.Duration, limit)
	for _, c := range silent {
		go func() {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			io.Copy(io.Discard, c) // what the server sends, until it closes
			closed <- time.Since(start)
		}()
	}
	var last time.Duration
	for range limit {
		last = <-closed
	}
	if last >= 29*time.Second {
		t.Fatalf("the server kept silent connections open for 30s")
	}
	t.Logf("the server closed %d silent connections within %s", limit, last.Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pb.NewAdminClient(s.dial()).ListTopics(ctx, &pb.ListTopicsRequest{}); err != nil {
		t.Fatalf("a client after the silent connections closed: %v", err)
	}
}
