package node

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestCapsWithin: connection caps leave a quarter of the descriptors (at
// least 64) to files, and the HTTP port's cap shrinks first.
func TestCapsWithin(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		nofile, api, http int
		wantAPI, wantHTTP int
	}{
		{1 << 20, 4096, 128, 4096, 128},
		{512, 4096, 128, 360, 24},
		{256, 4096, 128, 180, 12},
		{100, 4096, 128, 32, 4},
		{512, 100, 10, 100, 10},
	} {
		a, h := capsWithin(c.nofile, c.api, c.http, quiet)
		if a != c.wantAPI || h != c.wantHTTP {
			t.Errorf("capsWithin(%d, %d, %d) = %d, %d, want %d, %d", c.nofile, c.api, c.http, a, h, c.wantAPI, c.wantHTTP)
		}
		if reserve := c.nofile - a - h; c.api+c.http > c.nofile && reserve < max(64, c.nofile/4) {
			t.Errorf("nofile %d: only %d descriptors left for files", c.nofile, reserve)
		}
	}
}

// TestReserveAccept: past max a capListener accepts reserve more
// connections, marked reserved also under TLS, and closes the rest on
// arrival.
func TestReserveAccept(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rejected := prometheus.NewCounter(prometheus.CounterOpts{Name: "rejected"})
	l := newCapListener(tcp, 1, rejected, func(int64) {})
	l.reserve = 1
	defer l.Close()
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if reservedConn(first) || !reservedConn(second) || !reservedConn(tls.Server(second, &tls.Config{})) {
		t.Fatalf("reserved: first %v, second %v", reservedConn(first), reservedConn(second))
	}
	done := make(chan struct{})
	go func() { // closes the third on arrival, then waits until l closes
		defer close(done)
		if c, err := l.Accept(); err == nil {
			c.Close()
			t.Error("a connection past the reserve was accepted")
		}
	}()
	clients[2].SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = clients[2].Read(make([]byte, 1))
	if ne, ok := err.(net.Error); err == nil || ok && ne.Timeout() {
		t.Fatalf("the connection past the reserve was not closed: %v", err)
	}
	l.Close()
	<-done
}
