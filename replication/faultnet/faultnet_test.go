package faultnet

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves an echo server for node name.
func echo(t *testing.T, n *Network, name string) string {
	t.Helper()
	ln, err := n.Listen(name, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn) error {
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	b := make([]byte, 4)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadFull(c, b)
	return err
}

func TestPartitionAndHeal(t *testing.T) {
	n := New()
	addrA, addrB := echo(t, n, "a"), echo(t, n, "b")
	addrC := echo(t, n, "c")
	ctx := context.Background()
	ab, err := n.Dialer("a")(ctx, addrB)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := n.Dialer("b")(ctx, addrA)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := n.Dialer("a")(ctx, addrC)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []net.Conn{ab, ba, ac} {
		if err := roundTrip(c); err != nil {
			t.Fatal(err)
		}
	}

	n.Partition("b", "a")
	for name, c := range map[string]net.Conn{"a->b": ab, "b->a": ba} {
		if err := roundTrip(c); err == nil {
			t.Fatalf("%s: round trip across a partition succeeded", name)
		}
	}
	if _, err := n.Dialer("a")(ctx, addrB); !errors.Is(err, ErrPartitioned) {
		t.Fatalf("dial across a partition: %v", err)
	}
	if _, err := n.Dialer("b")(ctx, addrA); !errors.Is(err, ErrPartitioned) {
		t.Fatalf("dial across a partition: %v", err)
	}
	if err := roundTrip(ac); err != nil {
		t.Fatalf("link a-c should be up: %v", err)
	}

	n.Heal()
	c, err := n.Dialer("a")(ctx, addrB)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(c); err != nil {
		t.Fatal(err)
	}
}

func TestDelay(t *testing.T) {
	n := New()
	addrB := echo(t, n, "b")
	c, err := n.Dialer("a")(context.Background(), addrB)
	if err != nil {
		t.Fatal(err)
	}
	n.SetDelay("a", "b", 100*time.Millisecond)
	start := time.Now()
	if err := roundTrip(c); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 200*time.Millisecond {
		t.Fatalf("round trip %v, want at least 200ms", rtt)
	}
	n.SetDelay("a", "b", 0)
	start = time.Now()
	if err := roundTrip(c); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt >= 200*time.Millisecond {
		t.Logf("round trip %v after removing the delay (slow machine?)", rtt)
	}
}

func TestUnknownAddress(t *testing.T) {
	if _, err := New().Dialer("a")(context.Background(), "127.0.0.1:1"); err == nil {
		t.Fatal("dial to an unregistered address succeeded")
	}
}
