package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestAddrIsFreeDistinctAndBelowEphemeralRange(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s returned twice", addr)
		}
		seen[addr] = true
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if port < low || port >= ephemeralLow() {
			t.Fatalf("port %d outside [%d, %d)", port, low, ephemeralLow())
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		l.Close()
	}
}
