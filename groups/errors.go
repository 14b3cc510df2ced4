package groups

import (
	"errors"
	"fmt"
)

// Sentinel errors, one per condition a front-end maps to its own code.
// Returned errors wrap one of them with detail (which group, member,
// generation); test them with errors.Is.
var (
	// ErrUnknownMember: the member id is not in the group (never joined,
	// left, expired, or the coordinator failed over). The member must join
	// again with an empty member id. Kafka: UNKNOWN_MEMBER_ID; gRPC:
	// FAILED_PRECONDITION.
	ErrUnknownMember = errors.New("groups: unknown member")
	// ErrIllegalGeneration: the request names another generation than the
	// group's current one. Returned as a *GenerationError. Kafka:
	// ILLEGAL_GENERATION; gRPC: FAILED_PRECONDITION.
	ErrIllegalGeneration = errors.New("groups: illegal generation")
	// ErrRebalanceInProgress: the group is rebalancing; the member must
	// (re-)join. Kafka: REBALANCE_IN_PROGRESS; gRPC: ABORTED.
	ErrRebalanceInProgress = errors.New("groups: rebalance in progress")
	// ErrInconsistentProtocol: the member's protocol type differs from the
	// group's, it supports none of the group's protocols, or it names none.
	// Kafka: INCONSISTENT_GROUP_PROTOCOL; gRPC: FAILED_PRECONDITION.
	ErrInconsistentProtocol = errors.New("groups: inconsistent group protocol")
	// ErrInvalidSessionTimeout: the session timeout is outside the
	// coordinator's configured bounds. Kafka: INVALID_SESSION_TIMEOUT; gRPC:
	// INVALID_ARGUMENT.
	ErrInvalidSessionTimeout = errors.New("groups: invalid session timeout")
	// ErrInvalidGroup: an empty group name, or one over MaxGroupBytes.
	// Kafka: INVALID_GROUP_ID; gRPC: INVALID_ARGUMENT.
	ErrInvalidGroup = errors.New("groups: invalid group id")
	// ErrUnknownAssignor: a server-side assignment was asked for with a
	// protocol name no Assignor has. gRPC: INVALID_ARGUMENT.
	ErrUnknownAssignor = errors.New("groups: unknown assignor")
	// ErrGroupNotFound: the coordinator holds no such group. Kafka:
	// GROUP_ID_NOT_FOUND (DeleteGroups) or state "Dead" (DescribeGroups);
	// gRPC: NOT_FOUND.
	ErrGroupNotFound = errors.New("groups: group not found")
	// ErrGroupNotEmpty: DeleteGroup of a group that still has members.
	// Kafka: NON_EMPTY_GROUP; gRPC: FAILED_PRECONDITION.
	ErrGroupNotEmpty = errors.New("groups: group not empty")
	// ErrCoordinatorClosed: the coordinator was closed (the node is shutting
	// down or no longer coordinates). Kafka: COORDINATOR_NOT_AVAILABLE; gRPC:
	// UNAVAILABLE.
	ErrCoordinatorClosed = errors.New("groups: coordinator closed")
)

// GenerationError is the error for a request from an older (or otherwise
// different) generation. It wraps ErrIllegalGeneration and names the current
// generation so the member, and a human reading the message, know why.
type GenerationError struct {
	Group   string
	Member  string
	Given   int32 // the generation the request named
	Current int32 // the group's generation now
}

func (e *GenerationError) Error() string {
	return fmt.Sprintf("groups: illegal generation: member %q of group %q is at generation %d, the group is at generation %d; re-join the group",
		e.Member, e.Group, e.Given, e.Current)
}

// Unwrap makes errors.Is(err, ErrIllegalGeneration) true.
func (e *GenerationError) Unwrap() error { return ErrIllegalGeneration }

func unknownMember(group, member string) error {
	return fmt.Errorf("%w %q in group %q; join the group again", ErrUnknownMember, member, group)
}

func rebalancing(group string) error {
	return fmt.Errorf("%w in group %q; join the group again", ErrRebalanceInProgress, group)
}

// MaxGroupBytes bounds a group name, as the offsets store does
// (offsets.MaxGroupBytes): a group must be able to record its generations.
const MaxGroupBytes = 255
