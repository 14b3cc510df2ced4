package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/logd/logd/internal/atomicfile"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/replication/transport"
)

// A cluster's identity (Kafka's cluster.id in meta.properties is the
// model). A random id is made when the first node bootstraps the cluster
// and stored in every member's data directory, in ClusterIDFile; the Raft
// port sends and checks it on every connection, both ways (package
// replication/transport), so nodes whose data directories belong to
// different clusters never exchange a Raft byte.
//
//   - Bootstrap: the node makes the id and stores it before its metadata
//     group starts.
//   - Join (no cluster state): before it asks to join, the node asks the
//     node it joins through for the id (a hello on its Raft port) and
//     stores it; so by the time the metadata leader adds it as a voter and
//     dials it, it speaks with the cluster's id.
//   - Restart: the node reads the id from its data directory. With --join,
//     it checks that the node it was pointed at belongs to the same
//     cluster before it serves anything; if not, it does not start
//     (checkJoinTargetAtStart): it would serve its own cluster's topics to
//     the clients of the one it was pointed at. When that node does not
//     answer at start, it starts and asks again in the background; a
//     refusal then leaves it up and out (Refused). Either way the other
//     cluster does not change.
//   - Metadata: the first metadata leader that finds the state without an
//     id records its own (OpSetClusterID). A node whose data directory has
//     cluster state but no id file (written by a version without ids)
//     adopts the id from the metadata it applies, never from a peer's
//     answer: until then its connections are not checked (an empty id
//     matches any), and the metadata leader refuses a returning node that
//     the metadata and the Raft configuration do not know.
//
// The id file is written to a temporary file, synced and renamed over, and
// never replaced by another id: a node whose file names another cluster is
// refused, never re-labelled.
const ClusterIDFile = "cluster-id"

// newClusterID is a random id: 128 bits, base64url (22 characters, as
// Kafka's).
func newClusterID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a cluster id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func validClusterID(id string) error {
	if id == "" || len(id) > transport.MaxIDLen || strings.ContainsAny(id, " \t\r\n") {
		return fmt.Errorf("cluster id %q: want 1..%d bytes without spaces", id, transport.MaxIDLen)
	}
	return nil
}

// readClusterID is the cluster id stored in dir, "" when there is none.
func readClusterID(dir string) (string, error) {
	path := filepath.Join(dir, ClusterIDFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the cluster id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if err := validClusterID(id); err != nil {
		return "", fmt.Errorf("%s: %w: restore the file from a backup of this node, or start with an empty --data-dir", path, err)
	}
	return id, nil
}

// writeClusterID stores id in dir: a temporary file, synced, renamed over
// the name, and the directory synced.
func writeClusterID(dir, id string) error {
	if err := validClusterID(id); err != nil {
		return err
	}
	err := atomicfile.Write(filepath.Join(dir, ClusterIDFile), 0o644, func(f *os.File) error {
		_, err := f.WriteString(id + "\n")
		return err
	})
	if err != nil {
		return fmt.Errorf("store the cluster id: %w", err)
	}
	return nil
}

// ClusterID is the id of this node's cluster ("" while it has none: it has
// not joined yet, or its data directory predates ids and the metadata has
// not told it yet).
func (c *Cluster) ClusterID() string { return c.rn.ClusterID() }

// adoptClusterID stores id, told by from, as this node's cluster id (the
// file first, then the Raft port); refused when the node already has
// another.
func (c *Cluster) adoptClusterID(id, from string) error {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	cur := c.rn.ClusterID()
	switch {
	case cur == id:
		return nil
	case cur != "":
		return errOtherCluster(cur, id, from)
	}
	if err := writeClusterID(c.o.DataDir, id); err != nil {
		return err
	}
	if err := c.rn.SetClusterID(id); err != nil {
		return err
	}
	c.logger.Info("this node belongs to cluster "+id, "learned_from", from)
	return nil
}

// errOther marks the refusal of a node of another cluster: final, not
// retried.
var errOther = errors.New("another cluster")

// errOtherCluster: this node's data directory names cluster local, and
// who (the node at an address, the cluster metadata) names remote.
func errOtherCluster(local, remote, who string) error {
	return otherClusterError{kind.Errorf(kind.ErrFailedPrecondition, "this node's data directory belongs to cluster %s, %s "+
		"to cluster %s: a data directory belongs to one cluster: to add this node to that cluster, start it with an "+
		"empty --data-dir and --join; otherwise point --join at a node of its own cluster", local, who, remote)}
}

// otherClusterError is errOtherCluster's: its text is the refusal's alone
// (one line, for the CLI), and it is errOther too.
type otherClusterError struct{ error }

func (e otherClusterError) Is(target error) bool { return target == errOther }
func (e otherClusterError) Unwrap() error        { return e.error }

// checkPeer checks what the node at addr answered to a hello before this
// node joins or rejoins through it: a node without state and without an
// id takes the cluster's id; a node with another id is refused
// (errOtherCluster). A node with state but no id (a data directory from
// before ids) takes nothing from a peer: the metadata tells it.
func (c *Cluster) checkPeer(h transport.Hello, addr string) error {
	local := c.rn.ClusterID()
	switch {
	case h.ClusterID == "":
		return nil // a cluster from before ids: its metadata leader names it soon
	case local == "" && !c.meta.HadState():
		return c.adoptClusterID(h.ClusterID, "the node at "+addr)
	case local != "" && local != h.ClusterID:
		return errOtherCluster(local, h.ClusterID, "the node at "+addr)
	}
	return nil
}

// identityLoop keeps the node's id and the metadata's in line: the
// metadata leader records the cluster's id when the state has none
// (making one for a cluster from before ids), and a node without an id
// adopts the state's.
func (c *Cluster) identityLoop(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	warned := false
	for {
		changed := c.meta.FSM.Changed()
		err := c.syncIdentity(ctx)
		if err != nil && !warned && ctx.Err() == nil {
			c.logger.Error("the cluster id", "err", err)
			warned = true // once: the check repeats every change
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C:
		}
	}
}

func (c *Cluster) syncIdentity(ctx context.Context) error {
	state, local := c.meta.FSM.ClusterID(), c.rn.ClusterID()
	switch {
	case state != "" && local != state:
		return c.adoptClusterID(state, "the cluster metadata")
	case state == "" && c.meta.IsLeader():
		// After a restart the state is the snapshot's until the log
		// replays: only a state current in this term (a barrier) may be
		// taken to have no id.
		if err := c.OnMetaLeader(); err != nil {
			return err
		}
		if c.meta.FSM.ClusterID() != "" {
			return nil // the next round adopts it
		}
		if local == "" {
			id, err := newClusterID()
			if err != nil {
				return err
			}
			if err := c.adoptClusterID(id, "made by this node, the metadata leader"); err != nil {
				return err
			}
			local = id
		}
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err := c.meta.Apply(actx, meta.Command{Op: meta.OpSetClusterID, Name: local})
		if errors.Is(err, meta.ErrClusterIDSet) {
			return nil // recorded meanwhile: the next round adopts or refuses it
		}
		return err
	}
	return nil
}
