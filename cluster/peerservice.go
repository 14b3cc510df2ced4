package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// The peer service: every control call one node makes of another, on the
// Raft port rather than the public API. It is a channel of the node's Raft
// transport (PeerChannel, a group of replication/transport's Mux), so every
// call rides a session whose cluster id was checked (identity.go) and,
// with --raft-tls-*, whose peer proved a certificate from the cluster CA:
// only a node of this cluster can call it.
//
// The calls: join (and rejoin), which change the cluster's membership;
// status and list offset, answered by this package (peercall.go); and the
// operations the node's core registers with Handle: a client's request
// that must run on another node (the metadata leader, a partition's
// leader) is carried there with the client's principal as data, and that
// node's core authorizes it, once. The public API carries no mark of a
// forwarded request and lets no caller speak for another principal.
//
// Why a protocol of its own rather than gRPC over the channel: small
// calls; gRPC would add HTTP/2 framing and its own connection management
// on top of the transport's sessions, and a new service needs generated
// code. A call is one stream: the request, one frame; the answer, one
// frame; then both ends close. A frame is a 4-byte big-endian length (at
// most maxPeerFrame) and that many bytes of JSON.
const PeerChannel = "_peer"

const (
	// maxPeerFrame bounds a request and an answer: the public API's
	// clients get at most 4 MiB in an answer too (gRPC's default).
	maxPeerFrame = 4 << 20
	// peerCallTimeout bounds a call, the join's checks and Raft
	// configuration change included (AddVoter waits up to 30s).
	peerCallTimeout = 45 * time.Second
	// maxPeerHops bounds how many "not leader" answers a call follows.
	maxPeerHops = 3
	peerOpJoin  = "join"
)

// peerRequest is a call. Node and Rejoin are join's (the fields a join
// has always had); the other calls carry their request in Body.
type peerRequest struct {
	Op        string          `json:"op"`
	Node      meta.Node       `json:"node,omitzero"`
	Rejoin    bool            `json:"rejoin,omitempty"`
	Principal string          `json:"principal,omitempty"`
	TimeoutMs int64           `json:"timeout_ms,omitempty"` // what the caller waits, at most
	Body      json.RawMessage `json:"body,omitempty"`
}

// peerAnswer is a call's outcome: Kind "" is success (its answer in Body),
// else the error's kind (peererrors.go) with its message.
type peerAnswer struct {
	Kind    string    `json:"kind,omitempty"`
	Message string    `json:"message,omitempty"`
	Leader  meta.Node `json:"leader,omitzero"` // kind not_leader
	// What and Touched are not_leader's (Touched: the request was not
	// left untouched, so it is not sent on).
	What    string            `json:"what,omitempty"`
	Touched bool              `json:"touched,omitempty"`
	Detail  map[string]string `json:"detail,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// errFrameTooLarge is the error of a frame beyond maxPeerFrame.
func errFrameTooLarge(size int) error {
	return kind.Errorf(kind.ErrInvalidArgument, "peer call: a frame of %d bytes, more than the %d a call carries: "+
		"send the request in smaller parts", size, maxPeerFrame)
}

func writePeerFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxPeerFrame {
		return errFrameTooLarge(len(b))
	}
	_, err = w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

func readPeerFrame(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxPeerFrame {
		return errFrameTooLarge(int(size))
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// servePeers answers the peer channel's calls until it closes.
func (c *Cluster) servePeers(ctx context.Context, self meta.Node) {
	for {
		conn, err := c.peers.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1) // this loop is counted: the group is not at zero
		go func() { defer c.wg.Done(); c.servePeer(ctx, conn, self) }()
	}
}

func (c *Cluster) servePeer(ctx context.Context, conn net.Conn, self meta.Node) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(peerCallTimeout))
	var req peerRequest
	if err := readPeerFrame(conn, &req); err != nil {
		if !errors.Is(err, io.EOF) {
			c.logger.Warn("peer call: bad request", "remote", conn.RemoteAddr(), "err", err)
			if errors.Is(err, kind.ErrInvalidArgument) {
				writePeerFrame(conn, answerOf(err))
			}
		}
		return
	}
	timeout := peerCallTimeout - 5*time.Second
	if d := time.Duration(req.TimeoutMs) * time.Millisecond; d > 0 && d < timeout {
		timeout = d
	}
	ctx, cancel := context.WithTimeout(WithForwarded(ctx), timeout)
	defer cancel()
	// The caller sends nothing after its request: a read that returns
	// means it hung up (or broke the protocol), and the call is abandoned.
	// Its handler's context ends, so a read waiting for records stops and
	// a write not yet proposed is not proposed. The read ends when the
	// deferred Close does.
	go func() {
		var b [1]byte
		conn.Read(b[:])
		cancel()
	}()
	body, err := c.answer(ctx, req, conn.RemoteAddr().String(), self)
	a := answerOf(err)
	if err == nil && body != nil {
		if a.Body, err = json.Marshal(body); err != nil {
			a = answerOf(fmt.Errorf("peer call %s: encode the answer: %w", req.Op, err))
		}
	}
	if err := writePeerFrame(conn, a); err != nil && errors.Is(err, kind.ErrInvalidArgument) {
		writePeerFrame(conn, answerOf(fmt.Errorf("peer call %s: the answer: %w", req.Op, err)))
	}
}

// answer runs one call: the package's own, else the core's handler.
func (c *Cluster) answer(ctx context.Context, req peerRequest, from string, self meta.Node) (any, error) {
	switch req.Op {
	case peerOpJoin:
		return nil, c.Join(ctx, req.Node, req.Rejoin)
	case peerOpStatus:
		return c.LocalStatus(self), nil
	case peerOpListOffset:
		return c.answerListOffset(ctx, req.Body)
	}
	h := c.handlers.get(req.Op)
	if h == nil {
		return nil, kind.Errorf(kind.ErrUnavailable, "peer call %q: this node does not serve it (it is starting, or of another version)", req.Op)
	}
	return h(ctx, PeerCall{Op: req.Op, Principal: req.Principal, From: from, Body: req.Body})
}

// PeerCall is a call another node of the cluster made of this one.
type PeerCall struct {
	Op string
	// Principal is the principal of the client's request the call
	// carries ("User:alice"; "" anonymous): data for the handler to
	// authorize, never an identity the caller proved.
	Principal string
	From      string // the calling node's address on the Raft port
	Body      json.RawMessage
}

// PeerHandler answers a call: its answer goes back as JSON, its error
// by kind (peererrors.go). ctx ends with the caller's wait, and
// Forwarded(ctx) holds: the handler answers or fails, and never passes
// the request on to yet another node (the caller follows a "not leader"
// answer itself).
type PeerHandler func(ctx context.Context, call PeerCall) (any, error)

// peerHandlers are the operations the node's core registered.
type peerHandlers struct {
	mu sync.RWMutex
	m  map[string]PeerHandler
}

func (p *peerHandlers) get(op string) PeerHandler {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.m[op]
}

// Handle registers the handler of op, a call of the peer service. A call
// of an op not registered yet is answered kind.ErrUnavailable (retry).
func (c *Cluster) Handle(op string, h PeerHandler) {
	c.handlers.mu.Lock()
	defer c.handlers.mu.Unlock()
	if c.handlers.m == nil {
		c.handlers.m = map[string]PeerHandler{}
	}
	c.handlers.m[op] = h
}

// Call makes the call op of the node whose Raft address is raftAddr, with
// req as its body (JSON) and principal, the client's ("" anonymous), as
// data, and decodes the answer into resp (nil: none wanted). It follows
// "not leader" answers that name another node and left the request
// untouched, up to maxPeerHops. An error is of the kind the other node
// answered with (peererrors.go); a node that cannot be reached is
// kind.ErrUnavailable.
func (c *Cluster) Call(ctx context.Context, raftAddr, op, principal string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("peer call %s: encode the request: %w", op, err)
	}
	return c.call(ctx, raftAddr, peerRequest{Op: op, Principal: principal, Body: body}, resp)
}

// call makes req of raftAddr, following "not leader" answers.
func (c *Cluster) call(ctx context.Context, raftAddr string, req peerRequest, resp any) error {
	for hop := 0; ; hop++ {
		a, err := c.peerCall(ctx, raftAddr, req)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("peer call %s to the node at %s: %w", req.Op, raftAddr, ctx.Err())
			}
			if errors.Is(err, kind.ErrInvalidArgument) {
				return err // too large: retrying does not help
			}
			return kind.Errorf(kind.ErrUnavailable, "peer call %s to the node at %s: %v", req.Op, raftAddr, err)
		}
		err = a.err()
		var nl *NotLeaderError
		if errors.As(err, &nl) && nl.Untouched && nl.Leader.RaftAddr != "" && nl.Leader.RaftAddr != raftAddr && hop < maxPeerHops {
			raftAddr = nl.Leader.RaftAddr
			continue
		}
		if err != nil || resp == nil || len(a.Body) == 0 {
			return err
		}
		if err := json.Unmarshal(a.Body, resp); err != nil {
			return fmt.Errorf("peer call %s: decode the answer of the node at %s: %w", req.Op, raftAddr, err)
		}
		return nil
	}
}

// peerCall makes one call of the node whose Raft port is at raftAddr.
func (c *Cluster) peerCall(ctx context.Context, raftAddr string, req peerRequest) (peerAnswer, error) {
	// A call whose caller already gave up is not sent: a write sent now
	// could be applied after the caller's next one and undo it (meta's
	// Group.Apply refuses it on the leader for the same reason).
	if err := ctx.Err(); err != nil {
		return peerAnswer{}, err
	}
	timeout := peerCallTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if timeout <= 0 {
		return peerAnswer{}, context.DeadlineExceeded
	}
	req.TimeoutMs = max(timeout.Milliseconds(), 1)
	conn, err := c.peers.Dial(raft.ServerAddress(raftAddr), timeout)
	if err != nil {
		return peerAnswer{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if err := ctx.Err(); err != nil {
		return peerAnswer{}, err // ended while dialing
	}
	if err := writePeerFrame(conn, req); err != nil {
		return peerAnswer{}, err
	}
	var a peerAnswer
	if err := readPeerFrame(conn, &a); err != nil {
		return peerAnswer{}, err
	}
	return a, nil
}

// peerJoin asks the node at raftAddr to add n to the cluster (or, rejoin,
// to update a member's addresses), following "not leader" answers to the
// metadata leader.
func (c *Cluster) peerJoin(ctx context.Context, raftAddr string, n meta.Node, rejoin bool) error {
	return c.call(ctx, raftAddr, peerRequest{Op: peerOpJoin, Node: n, Rejoin: rejoin}, nil)
}

// checkJoiner calls back the node that asks to join as n, at its Raft
// address, before the metadata leader changes anything: it must answer
// with n's id (so a member's addresses change only by that member's own
// call, and a voter is added only once its Raft port answers) and with
// this cluster's id.
func (c *Cluster) checkJoiner(ctx context.Context, n meta.Node) error {
	h, err := c.rn.Hello(ctx, n.RaftAddr)
	if err != nil {
		return kind.Errorf(kind.ErrUnavailable, "node %q: its Raft address %s does not answer (%v): a node is added only once its "+
			"Raft port answers; check its --raft-addr and --raft-advertise (and with --raft-tls-*, that its certificate is "+
			"from the cluster CA and names that host)", n.ID, n.RaftAddr, err)
	}
	if h.NodeID != n.ID {
		return kind.Errorf(kind.ErrFailedPrecondition, "the node at %s is %q, not %q: a member's addresses change only by its own join",
			n.RaftAddr, h.NodeID, n.ID)
	}
	local := c.rn.ClusterID()
	switch {
	case local != "" && h.ClusterID != "" && h.ClusterID != local:
		return errOtherCluster(h.ClusterID, local, "the metadata leader at "+c.RaftAddr())
	case local != h.ClusterID:
		// One side has no id yet: a member with a data directory from
		// before ids adopts the metadata's soon.
		return kind.Errorf(kind.ErrUnavailable, "node %q does not know this cluster's id yet (%q, this cluster %q): retry", n.ID, h.ClusterID, local)
	}
	return nil
}
