package cluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication"
	"github.com/logd/logd/replication/meta"
	"github.com/logd/logd/routing"
)

// ErrUnknownNode: no member has that id. The control plane's other
// errors are of the generic kinds of package kind (kind.ErrUnavailable,
// kind.ErrInvalidArgument, ...), made with kind.Errorf.
var ErrUnknownNode = errors.New("unknown node")

// ErrTopicNotReady: a topic, or partitions added to one, exist, but not
// every new partition had a leader when the request's time ran out
// (awaitUsable). It is of kind kind.ErrFailedPrecondition, not
// kind.ErrUnavailable: a retry of the create would only be told the topic
// exists. Kafka answers the same case REQUEST_TIMED_OUT.
var ErrTopicNotReady = fmt.Errorf("topic not ready: %w", kind.ErrFailedPrecondition)

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

// Is matches kind.ErrNoLeader when no leader is known.
func (e *NotLeaderError) Is(target error) bool {
	return target == kind.ErrNoLeader && e.Leader.ID == ""
}

// metaWhat names the metadata group in errors.
const metaWhat = "the cluster metadata"

// RaftError maps an error of the Raft path to the kinds of package kind: another
// node leads (*NotLeaderError naming it), an outcome unknown or any
// failure not of a known kind (kind.ErrUnavailable: the append may or may not
// have happened; a retry is safe), Raft shut down (kind.ErrShuttingDown).
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
		return kind.Errorf(kind.ErrUnavailable, "%v: the outcome is unknown; retry (an idempotent producer's retry is not duplicated)", err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return kind.ErrShuttingDown
	case known(err):
		return err
	}
	// A failure on the Raft path (the leader's disk, a lost leader): the
	// append may or may not have happened; a retry is safe.
	return kind.Errorf(kind.ErrUnavailable, "%v: retry (an idempotent producer's retry is not duplicated)", err)
}

// known reports whether err is of a kind the front-ends map to something
// other than an internal error.
func known(err error) bool {
	var oor *log.OutOfRangeError
	var nl *NotLeaderError
	if errors.As(err, &oor) || errors.As(err, &nl) {
		return true
	}
	for _, k := range []error{kind.ErrUnavailable, kind.ErrInvalidArgument, kind.ErrFailedPrecondition, ErrUnknownNode, kind.ErrShuttingDown,
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
