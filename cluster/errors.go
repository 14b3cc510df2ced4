package cluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/routing"
)

// The kinds of error the control plane (and package broker, which
// re-exports them) answers with. Errorf makes an error of a kind whose
// message is the formatted text alone.
var (
	// ErrUnavailable: not now, retry (an election, a node catching up).
	ErrUnavailable = errors.New("unavailable")
	// ErrInvalidArgument: the request is wrong; its message says how.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrFailedPrecondition: the request cannot be done in this state
	// (a node that runs alone, the last node of a cluster).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnknownNode: no member has that id.
	ErrUnknownNode = errors.New("unknown node")
	// ErrShuttingDown: the node is stopping.
	ErrShuttingDown = errors.New("server: shutting down")
	// ErrNoLeader is matched by a *NotLeaderError that names no leader.
	ErrNoLeader = errors.New("no leader")
)

// kindError is an error of a kind whose message is its text alone.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Errorf is an error of kind (errors.Is(err, kind)) with the formatted
// message, without the kind's name in it.
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// NotLeaderError is the answer of a node that does not lead what a
// request needs: a partition's group or the cluster metadata. Leader is
// the node to ask instead; its ID is "" when no leader is known.
type NotLeaderError struct {
	What   string // "partition orders/3", "the cluster metadata", ...
	Leader meta.Node
	// Untouched: nothing of the request was done here, so it may be sent
	// to Leader as it is (a front-end may forward it).
	Untouched bool
	// Woke: the use woke this node's sleeping replica, which stands for
	// election (Cluster.AwaitLeader waits for it). Deferred: the replica
	// sleeps, and the node wakes no more groups now (Config.MaxAwake,
	// WakeRate): a retry may.
	Woke, Deferred bool
}

func (e *NotLeaderError) Error() string {
	if e.Leader.APIAddr == "" && e.Leader.ID == "" {
		return e.What + " has no leader right now (an election is under way, or too few replicas are up): retry shortly"
	}
	return "this node does not lead " + e.What + ": the leader is node " + e.Leader.ID
}

// Is matches ErrNoLeader when no leader is known.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNoLeader && e.Leader.ID == "" }

// metaWhat names the metadata group in errors.
const metaWhat = "the cluster metadata"

// RaftError maps an error of the Raft path to the kinds above: another
// node leads (*NotLeaderError naming it), an outcome unknown or any
// failure not of a known kind (ErrUnavailable: the append may or may not
// have happened; a retry is safe), Raft shut down (ErrShuttingDown).
func (c *Cluster) RaftError(err error) error {
	var nl *replication.NotLeaderError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nl):
		what := metaWhat
		if nl.Group != replication.MetaGroup {
			what = "partition group " + nl.Group
		}
		return &NotLeaderError{What: what, Leader: c.node(string(nl.LeaderID))}
	case errors.Is(err, replication.ErrOutcomeUnknown):
		return Errorf(ErrUnavailable, "%v: the outcome is unknown; retry (an idempotent producer's retry is not duplicated)", err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShuttingDown
	case known(err):
		return err
	}
	// A failure on the Raft path (the leader's disk, a lost leader): the
	// append may or may not have happened; a retry is safe.
	return Errorf(ErrUnavailable, "%v: retry (an idempotent producer's retry is not duplicated)", err)
}

// known reports whether err is of a kind the front-ends map to something
// other than an internal error.
func known(err error) bool {
	var oor *log.OutOfRangeError
	var nl *NotLeaderError
	if errors.As(err, &oor) || errors.As(err, &nl) {
		return true
	}
	for _, k := range []error{ErrUnavailable, ErrInvalidArgument, ErrFailedPrecondition, ErrUnknownNode, ErrShuttingDown,
		partition.ErrTopicNotFound, partition.ErrPartitionNotFound, partition.ErrTopicExists, partition.ErrInvalidConfig,
		partition.ErrOutOfOrderSequence, partition.ErrClosed, routing.ErrInvalidTopicName,
		batch.ErrCorrupt, batch.ErrShort, batch.ErrUnsupported,
		log.ErrInvalidBatch, log.ErrClosed, log.ErrCorrupt,
		offsets.ErrInvalidArgument, offsets.ErrInvalidReset, offsets.ErrCorrupt, offsets.ErrGenerationTaken,
		syscall.ENOSPC, syscall.EMFILE, syscall.ENFILE, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
