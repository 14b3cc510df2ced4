package raftrpc

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Config configures a Hub.
type Config struct {
	// Stream is the links' stream layer: the node's Mux group ChannelID.
	// Required; the Hub closes it.
	Stream raft.StreamLayer
	// Timeout bounds a call, a dial and a link's write. 0: 10s.
	Timeout time.Duration
	// QueueLen bounds each group's inbound queue. 0: 64.
	QueueLen int
	// PipelineDepth bounds the appends a pipeline has in flight. 0: 8.
	PipelineDepth int
	// Logger; nil: hclog's default.
	Logger hclog.Logger
}

// Hub is a node's links to its peers, shared by every group's Transport.
type Hub struct {
	cfg  Config
	log  hclog.Logger
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	groups  map[string]*Transport
	clients map[string]*client // by peer address
	servers map[*link]struct{}
	closed  bool
}

// NewHub starts serving the links peers open to this node.
func NewHub(cfg Config) (*Hub, error) {
	if cfg.Stream == nil {
		return nil, errors.New("raftrpc: Config.Stream is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 64
	}
	if cfg.PipelineDepth <= 0 {
		cfg.PipelineDepth = 8
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default()
	}
	h := &Hub{
		cfg: cfg, log: cfg.Logger.Named("raftrpc"), done: make(chan struct{}),
		groups: map[string]*Transport{}, clients: map[string]*client{}, servers: map[*link]struct{}{},
	}
	h.wg.Add(2)
	go h.acceptLoop()
	go h.expireLoop()
	return h, nil
}

// Close closes every link and waits for the Hub's goroutines. The groups'
// Transports fail their calls from then on.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	var links []*link
	for _, c := range h.clients {
		select {
		case <-c.ready: // c.link is set (or the dial failed) before ready
			if c.dialErr == nil {
				links = append(links, c.link)
			}
		default: // still dialing: dial sees closed
		}
	}
	for l := range h.servers {
		links = append(links, l)
	}
	h.mu.Unlock()
	err := h.cfg.Stream.Close()
	for _, l := range links {
		l.fail(ErrClosed)
	}
	h.wg.Wait()
	return err
}

// Group registers a group and returns its Transport. snapshots is the
// group's own stream layer, dialed by InstallSnapshot (see the package
// doc); the group's accepted connections starting with SnapshotMagic go
// to Transport.ServeSnapshot.
func (h *Hub) Group(id string, snapshots raft.StreamLayer) (*Transport, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if _, ok := h.groups[id]; ok {
		return nil, fmt.Errorf("raftrpc: group %q already registered", id)
	}
	t := &Transport{
		hub: h, id: id, snaps: snapshots,
		consumer: make(chan raft.RPC),
		done:     make(chan struct{}),
	}
	h.groups[id] = t
	return t, nil
}

func (h *Hub) group(id string) *Transport {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.groups[id]
}

func (h *Hub) forget(t *Transport) {
	h.mu.Lock()
	if h.groups[t.id] == t {
		delete(h.groups, t.id)
	}
	h.mu.Unlock()
}

// client returns the link to addr, dialing it when there is none.
func (h *Hub) client(addr raft.ServerAddress) (*client, error) {
	a := string(addr)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	c := h.clients[a]
	if c != nil {
		h.mu.Unlock()
		<-c.ready
		if c.dialErr != nil {
			return nil, c.dialErr
		}
		return c, nil
	}
	c = &client{addr: a, ready: make(chan struct{}), calls: map[uint64]*call{}}
	h.clients[a] = c
	h.mu.Unlock()

	c.dialErr = h.dial(c)
	if c.dialErr != nil {
		h.dropClient(c)
	}
	close(c.ready)
	if c.dialErr != nil {
		return nil, c.dialErr
	}
	return c, nil
}

// dial opens c's link and starts its goroutines.
func (h *Hub) dial(c *client) error {
	conn, err := h.cfg.Stream.Dial(raft.ServerAddress(c.addr), h.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("raftrpc: dial %s: %w", c.addr, err)
	}
	conn.SetWriteDeadline(time.Now().Add(h.cfg.Timeout))
	if _, err := conn.Write(append([]byte(preface), version)); err != nil {
		conn.Close()
		return fmt.Errorf("raftrpc: dial %s: %w", c.addr, err)
	}
	c.link = newLink(conn, h.cfg.Timeout, func(err error) {
		h.dropClient(c)
		c.failCalls(err)
	})
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		conn.Close()
		return ErrClosed
	}
	h.wg.Add(2)
	h.mu.Unlock()
	go func() { defer h.wg.Done(); c.writeLoop() }()
	go func() { defer h.wg.Done(); c.readLoop() }()
	return nil
}

func (h *Hub) dropClient(c *client) {
	h.mu.Lock()
	if h.clients[c.addr] == c {
		delete(h.clients, c.addr)
	}
	h.mu.Unlock()
}

// expireLoop fails the calls that outlived Timeout, once a second.
func (h *Hub) expireLoop() {
	defer h.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			h.mu.Lock()
			cs := make([]*client, 0, len(h.clients))
			for _, c := range h.clients {
				cs = append(cs, c)
			}
			h.mu.Unlock()
			for _, c := range cs {
				c.expire(now)
			}
		case <-h.done:
			return
		}
	}
}

func (h *Hub) acceptLoop() {
	defer h.wg.Done()
	for {
		c, err := h.cfg.Stream.Accept()
		if err != nil {
			select {
			case <-h.done:
				return
			default:
			}
			// The Mux's group fails only once closed.
			h.log.Warn("accepting links stopped", "error", err)
			return
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			c.Close()
			return
		}
		l := newLink(c, h.cfg.Timeout, nil)
		h.servers[l] = struct{}{}
		h.wg.Add(2)
		h.mu.Unlock()
		go func() { defer h.wg.Done(); l.writeLoop() }()
		go func() { defer h.wg.Done(); h.serve(l) }()
	}
}

// serve reads a peer's requests on l until the link fails.
func (h *Hub) serve(l *link) {
	defer func() {
		h.mu.Lock()
		delete(h.servers, l)
		h.mu.Unlock()
	}()
	var pre [len(preface) + 1]byte
	l.c.SetReadDeadline(time.Now().Add(h.cfg.Timeout))
	if _, err := io.ReadFull(l.c, pre[:]); err != nil {
		l.fail(err)
		return
	}
	if string(pre[:len(preface)]) != preface || pre[len(preface)] != version {
		h.log.Warn("refused a link: not this version's preface", "remote", l.c.RemoteAddr())
		l.fail(fmt.Errorf("%w: preface %q", ErrBadFrame, pre[:]))
		return
	}
	l.c.SetReadDeadline(time.Time{})
	fr := newFrameReader(l.c)
	for {
		b, err := fr.next(requestHeader)
		if err != nil {
			l.fail(readError(l.c.RemoteAddr().String(), err))
			return
		}
		req, err := fr.decodeRequest(b)
		if err != nil {
			h.log.Warn("closing a link: bad request", "remote", l.c.RemoteAddr(), "error", err)
			l.fail(err)
			return
		}
		h.dispatch(l, req)
	}
}

// dispatch hands a request to its group without blocking the reader.
func (h *Hub) dispatch(l *link, req request) {
	t := h.group(req.group)
	if t == nil {
		l.respond(req.id, isEmptyAppend(req.cmd), raft.RPCResponse{Error: fmt.Errorf("raftrpc: no group %q on this node", req.group)})
		return
	}
	t.receive(l, req)
}
