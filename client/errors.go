package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors: every error the client returns for a condition an
// application branches on matches one of these with errors.Is. Errors from
// the server also keep their gRPC status (status.Code works on them).
var (
	// ErrClosed is returned by a Client, Producer or Consumer after Close.
	ErrClosed = errors.New("client: closed")
	// ErrBufferFull is returned by Produce when the producer's buffer is full
	// and ProducerOptions.FailWhenFull is set.
	ErrBufferFull = errors.New("client: producer buffer full")
	// ErrRecordTooLarge is returned for a record that cannot fit in one batch
	// of ProducerOptions.MaxBatchBytes.
	ErrRecordTooLarge = errors.New("client: record too large")
	// ErrOffsetOutOfRange is matched (errors.Is) by every *OutOfRangeError.
	ErrOffsetOutOfRange = errors.New("client: offset out of range")
	// ErrCorruptBatch is matched (errors.Is) by every *CorruptBatchError.
	ErrCorruptBatch = errors.New("client: corrupt batch")
	// ErrInvalidRecord is returned for a record the producer cannot route
	// (no topic, a partition the topic does not have).
	ErrInvalidRecord = errors.New("client: invalid record")

	// ErrTopicNotFound: the topic does not exist (or was deleted).
	ErrTopicNotFound = errors.New("client: topic not found")
	// ErrPartitionNotFound: the topic has no such partition.
	ErrPartitionNotFound = errors.New("client: partition not found")
	// ErrTopicExists: CreateTopic of a topic that already exists.
	ErrTopicExists = errors.New("client: topic already exists")
	// ErrNodeNotFound: RemoveNode of a node that is not a member.
	ErrNodeNotFound = errors.New("client: node not found")
	// ErrInvalidArgument: the server refused the request's content (a bad
	// topic name, configuration, offset reset or batch); retrying it
	// unchanged fails again.
	ErrInvalidArgument = errors.New("client: invalid argument")
	// ErrResourceExhausted: the server lacks room for the request (a batch
	// over its --max-batch-bytes, a full disk, too many connections).
	ErrResourceExhausted = errors.New("client: server resources exhausted")
	// ErrUnavailable: the cluster cannot answer right now (no leader during
	// an election, a node shutting down or still setting up, no node
	// reachable). Admin calls retry it up to the retry timeout
	// (WithRetryTimeout) before returning it.
	ErrUnavailable = errors.New("client: unavailable")
	// ErrNotLeader: the node asked does not lead the partition and the
	// redirects did not reach one that does. It also matches ErrUnavailable.
	ErrNotLeader = errors.New("client: not the leader")
	// ErrUnreachable: no node answered at all (nothing listens at the
	// addresses, or the network is down). It also matches ErrUnavailable.
	ErrUnreachable = errors.New("client: no logd node answered")
	// ErrDeliveryTimeout: a produced record was not acknowledged within the
	// producer's DeliveryTimeout (ProducerOptions); the error also wraps
	// the last attempt's, so errors.Is and status.Code tell why. That
	// attempt may have failed only because the deadline cut it short, or
	// on the one node it was sent to: it does not say whether others
	// answered.
	ErrDeliveryTimeout = errors.New("not acknowledged within the delivery timeout")

	// ErrGroupNotFound: the group coordinator holds no such group (no
	// member joined it since the coordinator started).
	ErrGroupNotFound = errors.New("client: group not found")
	// ErrGroupNotEmpty: a group with members cannot be deleted; stop its
	// members first.
	ErrGroupNotEmpty = errors.New("client: group has members")
	// ErrRebalanceInProgress: the group is rebalancing; a member joins
	// again (a GroupConsumer does so itself).
	ErrRebalanceInProgress = errors.New("client: group rebalance in progress")
	// ErrIllegalGeneration: a member named an older generation than the
	// group's (a commit from a member that missed a rebalance is refused
	// with it: its partitions may belong to another member now).
	ErrIllegalGeneration = errors.New("client: illegal group generation")
	// ErrUnknownMember: the group does not know the member (it left, its
	// session expired, or the coordinator changed), or a commit from
	// outside the group while it has members.
	ErrUnknownMember = errors.New("client: unknown group member")

	// ErrUnauthenticated: the node requires credentials (--auth
	// required) and got none, or they are wrong (WithCredentials, a
	// client certificate).
	ErrUnauthenticated = errors.New("client: unauthenticated")
	// ErrClientCertificateRequired: the node requires a client
	// certificate (its --tls-client-ca) and the Client has none (WithTLS
	// with a tls.Config without Certificates). It also matches
	// ErrUnavailable; calls do not retry it.
	ErrClientCertificateRequired = errors.New("client: the node requires a client certificate")
	// ErrPermissionDenied: the node's ACLs do not allow the principal the
	// request; the message names the principal, operation and resource.
	ErrPermissionDenied = errors.New("client: permission denied")
	// ErrUserExists: CreateUser of a user that exists (without replace).
	ErrUserExists = errors.New("client: user already exists")
	// ErrUserNotFound: DeleteUser of a user that does not exist.
	ErrUserNotFound = errors.New("client: user not found")
)

// apiError is an error status from a logd node (or from gRPC about one),
// with errors.Is matching the sentinel of its condition. Error and
// GRPCStatus are the status's own, so status.Code and errdetails work.
type apiError struct {
	err error
	st  *status.Status
}

func (e *apiError) Error() string              { return e.err.Error() }
func (e *apiError) Unwrap() error              { return e.err }
func (e *apiError) GRPCStatus() *status.Status { return e.st }

// Is matches the sentinel of the status's code (and, where one code
// covers several conditions, of its reason or message).
func (e *apiError) Is(target error) bool {
	msg := e.st.Message()
	switch e.st.Code() {
	case codes.FailedPrecondition, codes.Aborted:
		switch errorReason(e.st) {
		case "REBALANCE_IN_PROGRESS":
			return target == ErrRebalanceInProgress
		case "ILLEGAL_GENERATION":
			return target == ErrIllegalGeneration
		case "UNKNOWN_MEMBER":
			return target == ErrUnknownMember
		case "NON_EMPTY_GROUP":
			return target == ErrGroupNotEmpty
		case "PRODUCER_FENCED":
			return target == ErrProducerFenced
		case "INVALID_TXN_STATE":
			return target == ErrInvalidTxnState
		}
	case codes.NotFound:
		switch {
		case strings.Contains(msg, "group not found"):
			return target == ErrGroupNotFound
		case strings.Contains(msg, "has partitions") || strings.Contains(msg, "partition not found"):
			return target == ErrPartitionNotFound
		case strings.Contains(msg, "is not a member"):
			return target == ErrNodeNotFound
		case strings.Contains(msg, "unknown user"):
			return target == ErrUserNotFound
		}
		return target == ErrTopicNotFound
	case codes.AlreadyExists:
		if strings.Contains(msg, "user") {
			return target == ErrUserExists
		}
		return target == ErrTopicExists
	case codes.Unauthenticated:
		return target == ErrUnauthenticated
	case codes.PermissionDenied:
		return target == ErrPermissionDenied
	case codes.InvalidArgument:
		return target == ErrInvalidArgument
	case codes.ResourceExhausted:
		return target == ErrResourceExhausted
	case codes.OutOfRange:
		return target == ErrOffsetOutOfRange
	case codes.Unavailable:
		switch target {
		case ErrUnavailable:
			return true
		case ErrNotLeader:
			return isNotLeader(e.st)
		case ErrUnreachable:
			return unreachable(e.st)
		}
	}
	return false
}

// wrapStatus makes a status error an *apiError; other errors (and nil) are
// returned as they are.
func wrapStatus(err error) error {
	if err == nil {
		return nil
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &apiError{err: err, st: st}
}

// isNotLeader reports a "this node does not lead" answer, with or without
// a leader named.
func isNotLeader(st *status.Status) bool {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetReason() == "NOT_LEADER" {
			return true
		}
	}
	msg := st.Message()
	return strings.Contains(msg, "does not lead") || strings.Contains(msg, "has no leader") || strings.Contains(msg, "not the leader")
}

// unreachable tells a failure to reach any node (gRPC's transport errors)
// from a node answering UNAVAILABLE (no leader, shutting down).
func unreachable(st *status.Status) bool {
	if st.Code() != codes.Unavailable {
		return false
	}
	for _, s := range []string{"connection refused", "connection error", "dial tcp", "no such host", "name resolver", "error reading from server", "transport is closing"} {
		if strings.Contains(st.Message(), s) {
			return true
		}
	}
	return false
}

// OutOfRangeError reports a read at an offset the partition does not hold:
// below its log start (already removed by retention) or past its end.
// errors.Is(err, ErrOffsetOutOfRange) holds.
type OutOfRangeError struct {
	Topic          string
	Partition      int32
	Offset         int64 // the offset asked for
	LogStartOffset int64 // earliest offset still held
	HighWatermark  int64 // next offset to be written
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("offset %d of %s/%d is out of range: the partition holds offsets %d to %d",
		e.Offset, e.Topic, e.Partition, e.LogStartOffset, e.HighWatermark)
}

// Is makes errors.Is(err, ErrOffsetOutOfRange) true.
func (e *OutOfRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }

// CorruptBatchError reports a stored batch that does not decode (stored
// before the server validated every record of a produced batch). Its
// records, FirstOffset to LastOffset, cannot be read; the records around
// them can: SeekPartition(Partition, AtOffset(LastOffset+1)) skips it.
// Poll returns the records before it first, and fails only when the
// partition's position reaches it. errors.Is(err, ErrCorruptBatch) holds.
type CorruptBatchError struct {
	Topic       string
	Partition   int32
	FirstOffset int64
	LastOffset  int64
	Err         error // what is wrong with it
}

func (e *CorruptBatchError) Error() string {
	return fmt.Sprintf("%s/%d: the stored batch at offsets %d to %d does not decode (%v): seek to offset %d to skip it",
		e.Topic, e.Partition, e.FirstOffset, e.LastOffset, e.Err, e.LastOffset+1)
}

// Is makes errors.Is(err, ErrCorruptBatch) true.
func (e *CorruptBatchError) Is(target error) bool { return target == ErrCorruptBatch }

func (e *CorruptBatchError) Unwrap() error { return e.Err }

// errorReason is the reason of the first google.rpc.ErrorInfo detail of
// st, or "".
func errorReason(st *status.Status) string {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.GetReason()
		}
	}
	return ""
}

// errorInfo returns the metadata of the first google.rpc.ErrorInfo detail of
// err's status, or nil.
func errorInfo(err error) map[string]string {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.GetMetadata()
		}
	}
	return nil
}

// leaderOf returns the leader address carried by a "not leader" UNAVAILABLE
// status, or "".
func leaderOf(err error) string {
	if status.Code(err) != codes.Unavailable {
		return ""
	}
	return errorInfo(err)["leader"]
}

// outOfRange turns an OUT_OF_RANGE status into an *OutOfRangeError; other
// errors are returned unchanged.
func outOfRange(err error, topic string, partition int32, offset int64) error {
	if status.Code(err) != codes.OutOfRange {
		return err
	}
	md := errorInfo(err)
	e := &OutOfRangeError{Topic: topic, Partition: partition, Offset: offset, LogStartOffset: -1, HighWatermark: -1}
	if v, perr := strconv.ParseInt(md["log_start_offset"], 10, 64); perr == nil {
		e.LogStartOffset = v
	}
	if v, perr := strconv.ParseInt(md["high_watermark"], 10, 64); perr == nil {
		e.HighWatermark = v
	}
	return e
}

// retryable reports whether a failed produce may be sent again, unchanged.
// The idempotent producer id and sequence make every such resend safe.
func retryable(err error) bool {
	if errors.Is(err, ErrClientCertificateRequired) {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	case codes.FailedPrecondition:
		// "out of order sequence": an earlier batch is not (yet) there, say
		// on a new leader that has not applied it. Resending unchanged is
		// the safe answer; sending the records again under a fresh producer
		// id could duplicate them if an earlier attempt was appended.
		return true
	}
	return false
}
