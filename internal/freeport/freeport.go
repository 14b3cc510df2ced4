// Package freeport picks loopback TCP addresses for servers that tests and
// the torture harness start and restart on a fixed address.
//
// Listening on 127.0.0.1:0 and closing gives a port that is free now, but
// the kernel takes such ports from its ephemeral range, the same range it
// uses for the local end of every outgoing connection: between the close and
// the server's bind (or between a node's kill and its restart), any client
// connection on the machine may take the port, and the bind fails with
// "address already in use" (CI saw this in the torture test). Addr picks
// ports below the ephemeral range instead, so only another listener that
// names the port explicitly can take it.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// low is the lowest port Addr picks: above the well-known and the common
// service ports.
const low = 10000

var (
	mu    sync.Mutex
	given = map[int]bool{} // ports this process already handed out
)

// Addr returns "127.0.0.1:PORT" with a port nothing listens on now, outside
// the kernel's ephemeral range, and not returned before by this process.
func Addr() (string, error) {
	high := ephemeralLow()
	mu.Lock()
	defer mu.Unlock()
	if high > low+1000 {
		for range 200 {
			port := low + rand.IntN(high-low)
			if given[port] {
				continue
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				continue
			}
			l.Close()
			given[port] = true
			return l.Addr().String(), nil
		}
	}
	// No room below the ephemeral range (or all of it taken): fall back to a
	// port the kernel picks.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("freeport: pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}
