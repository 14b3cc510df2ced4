package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// The session preface, written by the dialer of a TCP connection before
// anything else:
//
//	offset size field
//	     0    4 magic       "LDRS"
//	     4    1 version     2
//	     5    1 kind        1 session, 2 hello, 3 direct
//	     6    1 id length   0..255 (0: the dialer has no cluster id yet)
//	     7    … cluster id  the dialer's
//
// The acceptor answers (both kinds):
//
//	offset size field
//	     0    1 status      0 ok, 1 another cluster
//	     1    1 id length   0..255
//	     2    … cluster id  the acceptor's
//	     …    1 id length   1..255
//	     …    … node id     the acceptor's
//
// A session then runs yamux on the connection; a direct connection then
// carries one group's stream header and that group's bytes, as a stream of
// a session would (Mux.DirectGroup); a hello ends there (both sides
// close): it tells a node without a cluster id the id of the
// cluster it joins, and tells the metadata leader which node answers at a
// joining node's Raft address. A connection with another preface is
// closed unanswered.
const (
	sessionMagic   = "LDRS"
	sessionVersion = 2

	kindSession byte = 1
	kindHello   byte = 2
	kindDirect  byte = 3

	statusSameCluster  byte = 0
	statusOtherCluster byte = 1

	// MaxIDLen bounds a cluster id and a node id on the wire.
	MaxIDLen = 255
)

// ErrOtherCluster: the peer's cluster id is not this node's. Errors wrap
// it in a *ClusterMismatchError.
var ErrOtherCluster = errors.New("transport: the peer belongs to another cluster")

// ClusterMismatchError is a connection refused because the two nodes
// belong to different clusters (each one's data directory says which).
type ClusterMismatchError struct {
	Address       string // the peer's address (as dialed, or remote)
	Local, Remote string // the cluster ids
}

func (e *ClusterMismatchError) Error() string {
	return fmt.Sprintf("transport: this node's data directory belongs to cluster %s, the node at %s to cluster %s: "+
		"a node's data directory belongs to one cluster: to move this node to the other cluster, start it with an "+
		"empty --data-dir and --join; otherwise point --join (and the cluster's addresses) at its own cluster",
		e.Local, e.Address, e.Remote)
}

func (e *ClusterMismatchError) Unwrap() error { return ErrOtherCluster }

// Hello is what a node answers to a hello: its cluster id ("" while it has
// none) and its node id.
type Hello struct {
	ClusterID string
	NodeID    string
}

// differ reports whether two cluster ids name different clusters. An
// empty id is a node that does not know its cluster's id yet (a node
// joining, which learns it by a hello before it takes part in Raft, or a
// data directory of a version without ids, which learns it from the
// metadata): it is checked by the layers above, not here.
func differ(a, b string) bool { return a != "" && b != "" && a != b }

func appendPreface(dst []byte, kind byte, clusterID string) []byte {
	dst = append(dst, sessionMagic...)
	dst = append(dst, sessionVersion, kind, byte(len(clusterID)))
	return append(dst, clusterID...)
}

// readPreface reads a dialer's preface: its kind and cluster id.
func readPreface(r io.Reader) (kind byte, clusterID string, err error) {
	var fixed [len(sessionMagic) + 3]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return 0, "", err
	}
	if string(fixed[:4]) != sessionMagic || fixed[4] != sessionVersion || fixed[5] < kindSession || fixed[5] > kindDirect {
		return 0, "", fmt.Errorf("%w: session preface %q", ErrBadHeader, fixed[:])
	}
	id := make([]byte, fixed[6])
	if _, err := io.ReadFull(r, id); err != nil {
		return 0, "", err
	}
	return fixed[5], string(id), nil
}

func appendAnswer(dst []byte, status byte, clusterID, nodeID string) []byte {
	dst = append(dst, status, byte(len(clusterID)))
	dst = append(dst, clusterID...)
	dst = append(dst, byte(len(nodeID)))
	return append(dst, nodeID...)
}

// readAnswer reads an acceptor's answer to a preface.
func readAnswer(r io.Reader) (status byte, h Hello, err error) {
	var b [2]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, Hello{}, err
	}
	status = b[0]
	if status != statusSameCluster && status != statusOtherCluster {
		return 0, Hello{}, fmt.Errorf("%w: preface answer status %d", ErrBadHeader, status)
	}
	cid := make([]byte, b[1])
	if _, err := io.ReadFull(r, cid); err != nil {
		return 0, Hello{}, err
	}
	if _, err := io.ReadFull(r, b[:1]); err != nil {
		return 0, Hello{}, err
	}
	nid := make([]byte, b[0])
	if _, err := io.ReadFull(r, nid); err != nil {
		return 0, Hello{}, err
	}
	return status, Hello{ClusterID: string(cid), NodeID: string(nid)}, nil
}

// ClusterID is the cluster id this Mux sends and checks ("" while the node
// has none).
func (m *Mux) ClusterID() string {
	if p := m.clusterID.Load(); p != nil {
		return *p
	}
	return ""
}

// SetClusterID sets the cluster id this Mux sends and checks from now on
// (a joining node, once it learned and stored its cluster's). Sessions
// already open stay open: they were checked when they opened.
func (m *Mux) SetClusterID(id string) error {
	if len(id) > MaxIDLen {
		return fmt.Errorf("transport: cluster id of %d bytes, want at most %d", len(id), MaxIDLen)
	}
	m.clusterID.Store(&id)
	return nil
}

// Hello asks the node at address for its cluster id and node id, over a
// connection of its own (closed after the answer), dialed as every session
// is (Config.Dial: TLS where the Raft port has it).
func (m *Mux) Hello(ctx context.Context, address string) (Hello, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.DialTimeout)
	defer cancel()
	c, err := m.cfg.Dial(ctx, address)
	if err != nil {
		return Hello{}, fmt.Errorf("transport: hello to %s: %w", address, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.Write(appendPreface(nil, kindHello, m.ClusterID())); err != nil {
		return Hello{}, fmt.Errorf("transport: hello to %s: %w", address, err)
	}
	_, h, err := readAnswer(c)
	if err != nil {
		return Hello{}, fmt.Errorf("transport: hello to %s: %w", address, err)
	}
	return h, nil
}

// handshake runs the dialer's side of a preface of kind (a session or a
// direct connection) on raw: an error when the peer belongs to another
// cluster (checked on both sides: the peer refuses, and this side checks
// the id it answers).
func (m *Mux) handshake(raw net.Conn, address string, kind byte) error {
	raw.SetDeadline(time.Now().Add(m.cfg.DialTimeout))
	local := m.ClusterID()
	if _, err := raw.Write(appendPreface(nil, kind, local)); err != nil {
		return err
	}
	status, h, err := readAnswer(raw)
	if err != nil {
		return err
	}
	if status == statusOtherCluster || differ(local, h.ClusterID) {
		err := &ClusterMismatchError{Address: address, Local: local, Remote: h.ClusterID}
		m.warnMismatch(address, err)
		return err
	}
	raw.SetDeadline(time.Time{})
	return nil
}

// accept runs the acceptor's side of a preface on c (its deadline set):
// the preface's kind, and true when a session or a direct connection may
// start on it.
func (m *Mux) accept(c net.Conn) (byte, bool, error) {
	kind, remote, err := readPreface(c)
	if err != nil {
		return 0, false, err
	}
	local := m.ClusterID()
	status := statusSameCluster
	if kind != kindHello && differ(local, remote) {
		status = statusOtherCluster
	}
	if _, err := c.Write(appendAnswer(nil, status, local, m.cfg.NodeID)); err != nil {
		return kind, false, err
	}
	if status == statusOtherCluster {
		m.warnMismatch(c.RemoteAddr().String(), &ClusterMismatchError{Address: c.RemoteAddr().String(), Local: local, Remote: remote})
	}
	return kind, kind != kindHello && status == statusSameCluster, nil
}

// mismatchLog rate-limits the warning about a peer of another cluster:
// Raft redials it many times a second.
type mismatchLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

const mismatchLogEvery = time.Minute

func (m *Mux) warnMismatch(address string, err *ClusterMismatchError) {
	host, _, splitErr := net.SplitHostPort(address)
	if splitErr != nil {
		host = address
	}
	host += " " + err.Remote
	m.mismatch.mu.Lock()
	now := time.Now()
	if m.mismatch.last == nil {
		m.mismatch.last = map[string]time.Time{}
	}
	if t, ok := m.mismatch.last[host]; ok && now.Sub(t) < mismatchLogEvery {
		m.mismatch.mu.Unlock()
		return
	}
	m.mismatch.last[host] = now
	m.mismatch.mu.Unlock()
	m.log.Error("refused a connection with a node of another cluster", "error", err)
}
