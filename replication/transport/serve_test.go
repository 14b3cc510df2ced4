package transport

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A served group (Group.Serve) gets each routed connection in the Mux's
// routing goroutine, connections after the first ones too, and Close
// fails a read blocked in the server, which lets the routing goroutine end.
func TestServeHandsConnectionsOver(t *testing.T) {
	a, b := newMux(t, Config{}), newMux(t, Config{})
	ga, gb := mustGroup(t, a, "p/t/0"), mustGroup(t, b, "p/t/0")
	got := make(chan string, 4)
	ended := make(chan error, 4)
	gb.Serve(func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil {
			ended <- err
			return
		}
		got <- string(buf)
		_, err := io.ReadFull(c, buf) // until Close
		ended <- err
	})
	for _, msg := range []string{"first", "again"} {
		c, err := ga.Dial(raft.ServerAddress(b.Addr().String()), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			if s != msg {
				t.Fatalf("served %q, sent %q", s, msg)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q never reached the server", msg)
		}
	}
	gb.Close()
	for range 2 {
		select {
		case err := <-ended:
			if err == nil {
				t.Fatal("a read in the server went on after Close")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a server blocked on its connection outlived Close")
		}
	}
}
