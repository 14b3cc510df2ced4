package broker

import (
	"errors"
	"fmt"

	"github.com/logd/logd/auth"

	"github.com/logd/logd/cluster"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/log"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/replication/meta"
)

// The broker's errors. Front-ends map them, each in one file:
// internal/server/errors.go (gRPC statuses), kafka/errors.go (Kafka error
// codes, docs/kafka.md "Errors"), internal/httpapi/errors.go (HTTP
// statuses, docs/http.md "Errors"). Besides the errors below, the broker
// answers with the generic kinds of package kind (kind.ErrInvalidArgument,
// kind.ErrFailedPrecondition, kind.ErrUnavailable, kind.ErrNoLeader,
// kind.ErrShuttingDown): an error "of a kind" matches it with errors.Is
// and carries its own message (kind.Errorf). The storage packages' errors
// a front-end also sees are named in types.go (*OutOfRangeError, an offset
// outside the log with its bounds; ErrOutOfOrderSequence; ErrInvalidConfig;
// ErrLogCorrupt, stored data unreadable; ...). Other errors a front-end
// sees: routing.ErrInvalidTopicName, offsets.ErrInvalidArgument and
// offsets.ErrInvalidReset (bad input), offsets.ErrCorrupt (stored data
// unreadable), syscall.ENOSPC, EMFILE, ENFILE, and the context's errors.
var (
	// ErrUnknownTopic: no such topic.
	ErrUnknownTopic = partition.ErrTopicNotFound
	// ErrUnknownPartition: the topic has no such partition.
	ErrUnknownPartition = partition.ErrPartitionNotFound
	// ErrTopicExists: a topic of that name exists.
	ErrTopicExists = partition.ErrTopicExists
	// ErrInvalidBatch: a produced batch is not one whole, well-formed,
	// v2 batch with well-formed records; the message says what is wrong.
	ErrInvalidBatch = errors.New("invalid record batch")
	// ErrBatchTooLarge: a produced batch is over Config.MaxBatchBytes.
	ErrBatchTooLarge = errors.New("batch too large")
	// ErrNotEnoughReplicas: an acks=all produce to a topic whose
	// min.insync.replicas is above its replicas in sync now. It is of the
	// kind kind.ErrUnavailable: retry once the replicas are back.
	ErrNotEnoughReplicas = fmt.Errorf("not enough in-sync replicas: %w", kind.ErrUnavailable)
	// ErrDiskFull: the data directory's file system is (nearly) full.
	ErrDiskFull = errors.New("disk full")
	// ErrDenied: the principal may not do this. Every denial is a
	// *auth.DeniedError (errors.As), which names the principal, the
	// operation and the resource (its type picks Kafka's
	// TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED).
	ErrDenied = auth.ErrDenied
	// ErrUserExists: creating a user that exists (without replace).
	ErrUserExists = errors.New("user exists")
	// ErrUnknownUser: deleting a user that does not exist.
	ErrUnknownUser = auth.ErrUnknownUser

	// ErrUnknownNode: no member of the cluster has that id.
	ErrUnknownNode = cluster.ErrUnknownNode
	// ErrTopicNotReady: a topic (or its new partitions) was created, but
	// not every new partition had a leader within the request's time.
	ErrTopicNotReady = cluster.ErrTopicNotReady
)

// NotLeaderError is the answer of a node that does not lead the partition
// (or the cluster metadata) a request needs: Leader is the node to ask
// (ID "" when no leader is known: errors.Is(err, kind.ErrNoLeader)). Untouched
// says nothing of the request was done, so a front-end may forward it.
type NotLeaderError = cluster.NotLeaderError

// NotCoordinatorError is the answer of Coordinator on a node that does not
// coordinate groups: Leader is the metadata leader, which does.
type NotCoordinatorError struct {
	Leader Node
}

func (e *NotCoordinatorError) Error() string {
	if e.Leader.ID == "" {
		return "no node coordinates consumer groups right now (an election is under way): retry shortly"
	}
	return "this node does not coordinate consumer groups: node " + e.Leader.ID + " does"
}

// Node is a member of the cluster and the addresses it advertises.
type Node = meta.Node

// OutOfRangeError is an offset outside a partition's log.
type OutOfRangeError = log.OutOfRangeError
