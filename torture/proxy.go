package torture

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP proxy between clients and one node, through which the
// network nemeses act on the client's side of the connection: cut every
// connection (and refuse new ones), blackhole them (bytes are held both
// ways until healed), mute them (only the node's answers are held: requests
// are applied, their answers lost for now), or delay every chunk.
type Proxy struct {
	lis      net.Listener
	upstream string

	mu        sync.Mutex
	cond      *sync.Cond // signalled on every state change
	cut       bool
	blackhole bool
	mute      bool // hold only what the node sends back
	latency   time.Duration
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to upstream.
func NewProxy(upstream string) (*Proxy, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("torture: proxy listen: %w", err)
	}
	p := &Proxy{lis: lis, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.cut || p.closed
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up, false)
		go p.pipe(up, c, true)
	}
}

// pipe copies src to dst chunk by chunk, holding each chunk while the
// proxy blackholes (or, for answers, mutes) and delaying it by the latency.
func (p *Proxy) pipe(src, dst net.Conn, answers bool) {
	defer p.wg.Done()
	defer p.drop(src, dst)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for (p.blackhole || (answers && p.mute)) && !p.cut && !p.closed {
				p.cond.Wait()
			}
			stop, delay := p.cut || p.closed, p.latency
			p.mu.Unlock()
			if stop {
				return
			}
			if delay > 0 {
				time.Sleep(delay)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // either side gone: close both (gRPC does not half-close)
		}
	}
}

func (p *Proxy) drop(a, b net.Conn) {
	a.Close()
	b.Close()
	p.mu.Lock()
	delete(p.conns, a)
	delete(p.conns, b)
	p.mu.Unlock()
}

// Cut resets every connection and refuses new ones until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // RST, not FIN
		}
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Blackhole holds every byte in flight, both ways, until Heal.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	p.blackhole = true
	p.mu.Unlock()
}

// Mute holds every byte the node sends back, until Heal: requests still
// arrive and are applied, their answers do not.
func (p *Proxy) Mute() {
	p.mu.Lock()
	p.mute = true
	p.mu.Unlock()
}

// Delay adds d before every chunk forwarded, until Heal.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// SetCut cuts (as Cut) or, with false, accepts connections again, leaving
// the proxy's other faults as they are.
func (p *Proxy) SetCut(on bool) {
	if on {
		p.Cut()
		return
	}
	p.mu.Lock()
	p.cut = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// SetBlackhole holds (as Blackhole) or, with false, delivers again,
// leaving the proxy's other faults as they are.
func (p *Proxy) SetBlackhole(on bool) {
	p.mu.Lock()
	p.blackhole = on
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Heal ends every fault: held bytes flow, new connections are accepted.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut, p.blackhole, p.mute, p.latency = false, false, false, 0
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	err := p.lis.Close()
	p.wg.Wait()
	return err
}
