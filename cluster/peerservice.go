package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
)

// The peer service: the control calls one node makes of another, on the
// Raft port rather than the public API. It is a channel of the node's Raft
// transport (PeerChannel, a group of replication/transport's Mux), so every
// call rides a session whose cluster id was checked (identity.go) and,
// with --raft-tls-*, whose peer proved a certificate from the cluster CA:
// only a node of this cluster can call it. Today it carries one call:
// join (and rejoin), which changes the cluster's membership and so must
// never be open to a client.
//
// Why a protocol of its own rather than gRPC over the channel: one call of
// a few hundred bytes each way; gRPC would add HTTP/2 framing and its own
// connection management on top of the transport's sessions, and a new
// service needs generated code. A call is one stream: the request, one
// frame; the answer, one frame; then both ends close. A frame is a 4-byte
// big-endian length (at most maxPeerFrame) and that many bytes of JSON.
const PeerChannel = "_peer"

const (
	maxPeerFrame = 64 << 10
	// peerCallTimeout bounds a call, the join's checks and Raft
	// configuration change included (AddVoter waits up to 30s).
	peerCallTimeout = 45 * time.Second
	peerOpJoin      = "join"
)

type peerRequest struct {
	Op     string    `json:"op"`
	Node   meta.Node `json:"node"`
	Rejoin bool      `json:"rejoin,omitempty"`
}

// peerAnswer is a call's outcome: Kind "" is success, else one of the
// kinds below with the error's message.
type peerAnswer struct {
	Kind    string    `json:"kind,omitempty"`
	Message string    `json:"message,omitempty"`
	Leader  meta.Node `json:"leader,omitempty"` // kind not_leader
}

const (
	kindNotLeader          = "not_leader"
	kindOtherCluster       = "other_cluster"
	kindFailedPrecondition = "failed_precondition"
	kindInvalidArgument    = "invalid_argument"
	kindUnavailable        = "unavailable"
)

func answerOf(err error) peerAnswer {
	var nl *NotLeaderError
	switch {
	case err == nil:
		return peerAnswer{}
	case errors.As(err, &nl):
		return peerAnswer{Kind: kindNotLeader, Message: err.Error(), Leader: nl.Leader}
	case errors.Is(err, errOther):
		return peerAnswer{Kind: kindOtherCluster, Message: err.Error()}
	case errors.Is(err, kind.ErrFailedPrecondition):
		return peerAnswer{Kind: kindFailedPrecondition, Message: err.Error()}
	case errors.Is(err, kind.ErrInvalidArgument):
		return peerAnswer{Kind: kindInvalidArgument, Message: err.Error()}
	}
	return peerAnswer{Kind: kindUnavailable, Message: err.Error()}
}

func (a peerAnswer) err() error {
	switch a.Kind {
	case "":
		return nil
	case kindNotLeader:
		return &NotLeaderError{What: metaWhat, Leader: a.Leader, Untouched: true}
	case kindOtherCluster:
		return errors.Join(errOther, kind.Errorf(kind.ErrFailedPrecondition, "%s", a.Message))
	case kindFailedPrecondition:
		return kind.Errorf(kind.ErrFailedPrecondition, "%s", a.Message)
	case kindInvalidArgument:
		return kind.Errorf(kind.ErrInvalidArgument, "%s", a.Message)
	}
	return kind.Errorf(kind.ErrUnavailable, "%s", a.Message)
}

func writePeerFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxPeerFrame {
		return fmt.Errorf("peer call: frame of %d bytes, at most %d", len(b), maxPeerFrame)
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
		return fmt.Errorf("peer call: frame of %d bytes, at most %d", size, maxPeerFrame)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// servePeers answers the peer channel's calls until it closes.
func (c *Cluster) servePeers(ctx context.Context) {
	for {
		conn, err := c.peers.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1) // this loop is counted: the group is not at zero
		go func() { defer c.wg.Done(); c.servePeer(ctx, conn) }()
	}
}

func (c *Cluster) servePeer(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(peerCallTimeout))
	var req peerRequest
	if err := readPeerFrame(conn, &req); err != nil {
		if !errors.Is(err, io.EOF) {
			c.logger.Warn("peer call: bad request", "remote", conn.RemoteAddr(), "err", err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(ctx, peerCallTimeout-5*time.Second)
	defer cancel()
	var err error
	switch req.Op {
	case peerOpJoin:
		err = c.Join(ctx, req.Node, req.Rejoin)
	default:
		err = kind.Errorf(kind.ErrInvalidArgument, "peer call %q: this node does not know it (a node of a newer version?)", req.Op)
	}
	writePeerFrame(conn, answerOf(err))
}

// peerCall makes one call of the node whose Raft port is at raftAddr.
func (c *Cluster) peerCall(ctx context.Context, raftAddr string, req peerRequest) (peerAnswer, error) {
	timeout := peerCallTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	conn, err := c.peers.Dial(raft.ServerAddress(raftAddr), timeout)
	if err != nil {
		return peerAnswer{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
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
	for hop := 0; ; hop++ {
		a, err := c.peerCall(ctx, raftAddr, peerRequest{Op: peerOpJoin, Node: n, Rejoin: rejoin})
		if err != nil {
			return kind.Errorf(kind.ErrUnavailable, "join through the node at %s: %v", raftAddr, err)
		}
		err = a.err()
		var nl *NotLeaderError
		if errors.As(err, &nl) && nl.Leader.RaftAddr != "" && nl.Leader.RaftAddr != raftAddr && hop < 3 {
			raftAddr = nl.Leader.RaftAddr
			continue
		}
		return err
	}
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
