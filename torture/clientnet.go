package torture

import (
	"fmt"
	"math/rand/v2"
	"sync"
)

// ClientNet gives each workload producer its own proxy to the node it
// talks to, so the client-cut nemesis can cut one client off while the
// others go on: the asymmetric partition where a client's request is
// applied but its answer lost, then retried later.
type ClientNet struct {
	mu      sync.Mutex
	proxies []*Proxy
	closed  bool
}

// NewClientNet returns an empty ClientNet; close it after the run.
func NewClientNet() *ClientNet { return &ClientNet{} }

// Dial returns the address through which a client reaches upstream: a new
// proxy of its own.
func (n *ClientNet) Dial(upstream string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", fmt.Errorf("torture: client net closed")
	}
	p, err := NewProxy(upstream)
	if err != nil {
		return "", err
	}
	n.proxies = append(n.proxies, p)
	return p.Addr(), nil
}

// pick returns a random client's proxy, nil when there is none.
func (n *ClientNet) pick(rng *rand.Rand) *Proxy {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.proxies) == 0 {
		return nil
	}
	return n.proxies[rng.IntN(len(n.proxies))]
}

// Close closes every client's proxy.
func (n *ClientNet) Close() {
	n.mu.Lock()
	n.closed = true
	ps := n.proxies
	n.proxies = nil
	n.mu.Unlock()
	for _, p := range ps {
		p.Close()
	}
}
