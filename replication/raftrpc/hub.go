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
	// Timeout bounds a call and a dial (not a link's writes: see link).
	// 0: 10s.
	Timeout time.Duration
	// QueueLen bounds each group's inbound queue. 0: 64.
	QueueLen int
	// PipelineDepth bounds the appends a pipeline has in flight. 0: 8.
	PipelineDepth int
	// Silence: a link whose calls time out while nothing at all was read
	// from it for this long is failed, and the next call dials a new one.
	// A direct connection (transport.Mux.DirectGroup) has no keep-alive
	// of its own; this is the Mux session's (a ping unanswered for 30s
	// closes the session). 0: 30s.
	Silence time.Duration
	// Logger; nil: hclog's default.
	Logger hclog.Logger
}

// Hub is a node's links to its peers, shared by every group's Transport.
type Hub struct {
	cfg  Config
	log  hclog.Logger
	done chan struct{}
	wg   sync.WaitGroup

	// groups (id -> *Transport) and clients (peer address -> *client)
	// are read by every request a link reader dispatches and by every
	// call: sync.Maps, so that neither reads under mu. A link reader
	// queued on a Hub-wide mutex behind the calls of a thousand groups
	// electing at once stopped reading for seconds on a starved node;
	// its peers' writes then hit their deadline and every group's calls
	// failed with the link, and elections never finished.
	groups  sync.Map
	clients sync.Map

	mu      sync.Mutex // guards servers, closed, and additions to groups and clients
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
	if cfg.Silence <= 0 {
		cfg.Silence = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default()
	}
	h := &Hub{
		cfg: cfg, log: cfg.Logger.Named("raftrpc"), done: make(chan struct{}),
		servers: map[*link]struct{}{},
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
	h.clients.Range(func(_, v any) bool {
		c := v.(*client)
		select {
		case <-c.ready: // c.link is set (or the dial failed) before ready
			if c.dialErr == nil {
				links = append(links, c.link)
			}
		default: // still dialing: dial sees closed
		}
		return true
	})
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
	t := &Transport{
		hub: h, id: id, snaps: snapshots,
		consumer: make(chan raft.RPC),
		done:     make(chan struct{}),
	}
	if _, loaded := h.groups.LoadOrStore(id, t); loaded {
		return nil, fmt.Errorf("raftrpc: group %q already registered", id)
	}
	return t, nil
}

// group returns the registered group id, or nil; it takes no lock.
func (h *Hub) group(id string) *Transport {
	if v, ok := h.groups.Load(id); ok {
		return v.(*Transport)
	}
	return nil
}

func (h *Hub) forget(t *Transport) { h.groups.CompareAndDelete(t.id, t) }

// client returns the link to addr, dialing it when there is none. With a
// link, it takes no lock (see Hub.clients).
func (h *Hub) client(addr raft.ServerAddress) (*client, error) {
	select {
	case <-h.done:
		return nil, ErrClosed
	default:
	}
	a := string(addr)
	if v, ok := h.clients.Load(a); ok {
		return v.(*client).dialed()
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	v, loaded := h.clients.LoadOrStore(a, &client{addr: a, ready: make(chan struct{}), calls: map[uint64]*call{}})
	h.mu.Unlock()
	c := v.(*client)
	if loaded {
		return c.dialed()
	}
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
	conn.SetWriteDeadline(time.Time{}) // the link's writes have none
	c.link = newLink(conn, func(err error) {
		h.dropClient(c)
		c.failCalls(err)
	})
	c.link.prune = c.dropEnded
	c.lastRead.Store(time.Now().UnixNano())
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

// dialed waits for c's dial and returns c, or the dial's error.
func (c *client) dialed() (*client, error) {
	<-c.ready
	if c.dialErr != nil {
		return nil, c.dialErr
	}
	return c, nil
}

func (h *Hub) dropClient(c *client) { h.clients.CompareAndDelete(c.addr, c) }

// expireLoop fails the calls that outlived Timeout, once a second.
func (h *Hub) expireLoop() {
	defer h.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			h.clients.Range(func(_, v any) bool {
				v.(*client).expire(now, h.cfg.Silence)
				return true
			})
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
		l := newLink(c, nil)
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
