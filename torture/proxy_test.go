package torture

import (
	"bufio"
	"net"
	"slices"
	"testing"
	"time"
)

// echo serves lines back on a loopback port.
func echo(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					c.Write(append(sc.Bytes(), '\n'))
				}
			}()
		}
	}()
	return l.Addr().String()
}

func TestProxyFaults(t *testing.T) {
	p, err := NewProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(msg string, within time.Duration) error {
		c.SetDeadline(time.Now().Add(within))
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			return err
		}
		got, err := r.ReadString('\n')
		if err == nil && got != msg+"\n" {
			t.Fatalf("echo %q, want %q", got, msg)
		}
		return err
	}
	if err := roundTrip("a", time.Second); err != nil {
		t.Fatal(err)
	}
	// Blackhole: the line is held, then delivered after Heal.
	p.Blackhole()
	if err := roundTrip("b", 200*time.Millisecond); err == nil {
		t.Fatal("a blackholed proxy delivered")
	}
	p.Heal()
	c.SetDeadline(time.Now().Add(time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "b\n" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
	// Mute: the line arrives (the echo server answers) but the answer is
	// held until Heal.
	p.Mute()
	if err := roundTrip("m", 200*time.Millisecond); err == nil {
		t.Fatal("a muted proxy delivered an answer")
	}
	p.Heal()
	c.SetDeadline(time.Now().Add(time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "m\n" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
	// Delay.
	p.Delay(100 * time.Millisecond)
	start := time.Now()
	if err := roundTrip("c", time.Second); err != nil || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("delayed round trip: %v after %s", err, time.Since(start))
	}
	p.Heal()
	// Cut: the connection breaks and new ones are refused until Heal.
	p.Cut()
	if err := roundTrip("d", time.Second); err == nil {
		t.Fatal("a cut connection still works")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		c2.SetDeadline(time.Now().Add(time.Second))
		if _, err := c2.Read(make([]byte, 1)); err == nil {
			t.Fatal("a new connection was served while cut")
		}
		c2.Close()
	}
	p.Heal()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	c, r = c3, bufio.NewReader(c3)
	if err := roundTrip("e", time.Second); err != nil {
		t.Fatalf("after heal: %v", err)
	}
}

func TestClusterArgs(t *testing.T) {
	c := &ProcessCluster{nodes: []*procNode{
		{id: 0, addr: "127.0.0.1:7000", raftAddr: "127.0.0.1:7100"},
		{id: 1, addr: "127.0.0.1:7001", raftAddr: "127.0.0.1:7101"},
	}}
	want := [][]string{
		{"--node-id", "1", "--raft-addr", "127.0.0.1:7100", "--bootstrap"},
		{"--node-id", "2", "--raft-addr", "127.0.0.1:7101", "--join", "127.0.0.1:7000"},
	}
	for i, w := range want {
		if got := ClusterArgs(i, c); !slices.Equal(got, w) {
			t.Errorf("node %d: %q, want %q", i, got, w)
		}
	}
}
