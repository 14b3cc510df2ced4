package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/auth"
	"github.com/logd/logd/broker"
	"github.com/logd/logd/groups"
	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/internal/kind"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/routing"
)

// errorDomain names logd in ErrorInfo details.
const errorDomain = "logd"

// toStatus maps an error of the broker (and the packages whose errors it
// passes on) to a gRPC status. It is the only place that does: every
// status of this package is made in this file. Every call's error goes
// through it (statusUnary, statusStream); a handler calls it itself only
// where it needs the status (ProduceStream's answers, the metrics).
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var oor *broker.OutOfRangeError
	var nl *broker.NotLeaderError
	var nc *broker.NotCoordinatorError
	var ge *groups.GenerationError
	var te *broker.TxnError
	switch {
	case errors.As(err, &te):
		return txnStatus(te)
	case errors.As(err, &oor):
		return outOfRange(oor.Offset, oor.StartOffset, oor.HighWatermark)
	case errors.As(err, &nl):
		return unavailableLeader(nl.What, nl.Leader.APIAddr)
	case errors.As(err, &nc):
		return unavailableLeader("the consumer groups", nc.Leader.APIAddr)
	case errors.As(err, &ge):
		return withInfo(status.New(codes.FailedPrecondition, err.Error()), "ILLEGAL_GENERATION",
			map[string]string{"generation": strconv.Itoa(int(ge.Current))})
	}
	for _, g := range groupErrors {
		if errors.Is(err, g.err) {
			return withInfo(status.New(g.code, err.Error()), g.reason, nil)
		}
	}
	if errors.Is(err, groups.ErrCoordinatorClosed) {
		return status.Error(codes.Unavailable, "the group coordinator closed (the node is shutting down or no longer leads the cluster metadata): join the group again")
	}
	if c, ok := codeOf(err); ok {
		return status.Error(c, messageOf(c, err))
	}
	return status.Error(codes.Internal, err.Error())
}

// codeOf is the code of an error of a known kind: the closed set of
// package kind first, then the packages' own sentinels.
func codeOf(err error) (codes.Code, bool) {
	if c, ok := kindCodes[kind.Of(err)]; ok {
		return c, true
	}
	for _, k := range errorCodes {
		for _, e := range k.errs {
			if errors.Is(err, e) {
				return k.code, true
			}
		}
	}
	return codes.Unknown, false
}

// kindCodes maps every one of kind.Kinds.
var kindCodes = map[error]codes.Code{
	kind.ErrInvalidArgument:    codes.InvalidArgument,
	kind.ErrFailedPrecondition: codes.FailedPrecondition,
	kind.ErrUnavailable:        codes.Unavailable,
	kind.ErrNoLeader:           codes.Unavailable,
	kind.ErrShuttingDown:       codes.Unavailable,
}

// errorCodes maps the packages' sentinels to codes, first match wins.
var errorCodes = []struct {
	code codes.Code
	errs []error
}{
	{codes.NotFound, []error{broker.ErrUnknownTopic, broker.ErrUnknownPartition, broker.ErrUnknownNode, broker.ErrUnknownUser}},
	{codes.AlreadyExists, []error{broker.ErrTopicExists, broker.ErrUserExists}},
	{codes.InvalidArgument, []error{auth.ErrInvalid, broker.ErrInvalidConfig, routing.ErrInvalidTopicName, batch.ErrCorrupt,
		batch.ErrShort, batch.ErrUnsupported, broker.ErrLogInvalidBatch, offsets.ErrInvalidArgument, offsets.ErrInvalidReset,
		broker.ErrInvalidBatch, auth.ErrMechanism}},
	{codes.ResourceExhausted, []error{broker.ErrBatchTooLarge, broker.ErrDiskFull, syscall.ENOSPC, syscall.EMFILE, syscall.ENFILE}},
	{codes.FailedPrecondition, []error{broker.ErrOutOfOrderSequence, groups.ErrIllegalGeneration}},
	{codes.Unavailable, []error{broker.ErrLogClosed, broker.ErrPartitionClosed}},
	{codes.PermissionDenied, []error{broker.ErrDenied}},
	{codes.Unauthenticated, []error{auth.ErrAuthenticationFailed, auth.ErrUnauthenticated, auth.ErrPlaintextCredentials}},
	{codes.OutOfRange, []error{broker.ErrOffsetOutOfRange}},
	// A generation recorded concurrently: joining again succeeds.
	{codes.Aborted, []error{offsets.ErrGenerationTaken}},
	{codes.Canceled, []error{context.Canceled}},
	{codes.DeadlineExceeded, []error{context.DeadlineExceeded}},
	{codes.DataLoss, []error{broker.ErrLogCorrupt, offsets.ErrCorrupt}},
}

// groupErrors maps the group coordinator's errors (docs/groups.md) to
// codes, with the ErrorInfo reason the client acts on where there is one.
var groupErrors = []struct {
	err    error
	code   codes.Code
	reason string
}{
	{groups.ErrUnknownMember, codes.FailedPrecondition, "UNKNOWN_MEMBER"},
	{groups.ErrRebalanceInProgress, codes.Aborted, "REBALANCE_IN_PROGRESS"},
	{groups.ErrInconsistentProtocol, codes.FailedPrecondition, "INCONSISTENT_GROUP_PROTOCOL"},
	{groups.ErrGroupNotEmpty, codes.FailedPrecondition, "NON_EMPTY_GROUP"},
	{groups.ErrInvalidSessionTimeout, codes.InvalidArgument, ""},
	{groups.ErrInvalidGroup, codes.InvalidArgument, ""},
	{groups.ErrUnknownAssignor, codes.InvalidArgument, ""},
	{groups.ErrGroupNotFound, codes.NotFound, ""},
}

// txnStatus is a refusal of the transaction coordinator: the code of its
// kind, and Kafka's name of its code as the ErrorInfo reason (the client
// tells a fenced producer by it).
func txnStatus(te *broker.TxnError) error {
	c, _ := codeOf(te)
	reason := map[broker.TxnCode]string{
		broker.TxnProducerFenced:  "PRODUCER_FENCED",
		broker.TxnInvalidState:    "INVALID_TXN_STATE",
		broker.TxnConcurrent:      "CONCURRENT_TRANSACTIONS",
		broker.TxnUnknownProducer: "INVALID_PRODUCER_ID_MAPPING",
		broker.TxnInvalidTimeout:  "INVALID_TRANSACTION_TIMEOUT",
	}[te.Code]
	return withInfo(status.New(c, te.Error()), reason, nil)
}

// messageOf is the status message of err: its own, but for the kinds
// whose cause the client cannot act on as written.
func messageOf(c codes.Code, err error) string {
	switch {
	case errors.Is(err, broker.ErrUnknownTopic), errors.Is(err, broker.ErrUnknownPartition):
		return err.Error() + " (list topics with `logd topic list`)"
	case errors.Is(err, broker.ErrLogClosed), errors.Is(err, broker.ErrPartitionClosed), errors.Is(err, kind.ErrShuttingDown):
		return "the server is shutting down: retry against another node or after restart"
	case c == codes.ResourceExhausted && errors.Is(err, syscall.ENOSPC) && !errors.Is(err, broker.ErrDiskFull):
		return "the server's disk is full: retry after an operator frees space (or retention trims)"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "the server is out of file descriptors: raise its limit (ulimit -n) or use fewer partitions or connections"
	}
	return err.Error()
}

// outOfRange is the OUT_OF_RANGE status, with the log's bounds in an
// ErrorInfo so clients can reset without another round trip.
func outOfRange(offset, start, hw int64) error {
	held := "it holds no records"
	if start < hw {
		held = fmt.Sprintf("it holds offsets %d to %d", start, hw-1)
	}
	msg := fmt.Sprintf("offset %d is past the end of the partition: the next record gets offset %d (%s); seek to latest to wait for new records", offset, hw, held)
	if offset < start {
		msg = fmt.Sprintf("offset %d was deleted (by retention or a trim-prefix): the partition starts at %d (%s); seek to earliest", offset, start, held)
	}
	st := status.New(codes.OutOfRange, msg)
	return withInfo(st, "OFFSET_OUT_OF_RANGE", map[string]string{
		"log_start_offset": strconv.FormatInt(start, 10),
		"high_watermark":   strconv.FormatInt(hw, 10),
	})
}

// withInfo is st with an ErrorInfo of reason and metadata (none for an
// empty reason).
func withInfo(st *status.Status, reason string, md map[string]string) error {
	if reason == "" {
		return st.Err()
	}
	st2, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain, Metadata: md})
	if err != nil {
		return st.Err()
	}
	return st2.Err()
}

// unavailableLeader is the UNAVAILABLE answer of a node that does not lead
// what: leader, when known, is the API address to ask instead (in an
// ErrorInfo, reason NOT_LEADER; clients follow it transparently).
func unavailableLeader(what, leader string) error {
	if leader == "" {
		return status.Errorf(codes.Unavailable, "%s has no leader right now (an election is under way, or too few replicas are up): retry shortly", what)
	}
	st := status.Newf(codes.Unavailable, "this node does not lead %s: the leader is at %s", what, leader)
	return withInfo(st, "NOT_LEADER", map[string]string{"leader": leader})
}

func invalidArg(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// Statuses of the gRPC front-end's own checks.

func tooLarge(format string, args ...any) error {
	return status.Errorf(codes.ResourceExhausted, format, args...)
}

// corruptBatch is the DATA_LOSS status of a read that starts at a stored
// batch that does not decode, with the batch's offsets in an ErrorInfo
// (reason CORRUPT_BATCH) so a reader can skip past it.
func corruptBatch(name string, info batch.Info, err error) error {
	st := status.Newf(codes.DataLoss,
		"%s: the stored batch at offsets %d to %d does not decode (%v): its records cannot be read; read from offset %d to skip it",
		name, info.BaseOffset, info.LastOffset(), err, info.NextOffset())
	return withInfo(st, "CORRUPT_BATCH", map[string]string{
		"first_offset": strconv.FormatInt(info.BaseOffset, 10),
		"last_offset":  strconv.FormatInt(info.LastOffset(), 10),
		"next_offset":  strconv.FormatInt(info.NextOffset(), 10),
	})
}

// slowSubscriber is the status a stream ends with when its client does not
// read: RESOURCE_EXHAUSTED with an ErrorInfo (reason SLOW_SUBSCRIBER)
// carrying the offset to subscribe again from.
func slowSubscriber(name string, off int64, timeout string) error {
	st := status.Newf(codes.ResourceExhausted,
		"subscription to %s ended at offset %d: the client read nothing for %s while a message waited; read faster (or ask for smaller messages with max_bytes) and subscribe again from offset %d",
		name, off, timeout, off)
	return withInfo(st, "SLOW_SUBSCRIBER", map[string]string{"next_offset": strconv.FormatInt(off, 10)})
}

// badMessage is the status of a request that did not unmarshal.
func badMessage(err error) error {
	return status.Errorf(codes.InvalidArgument, "the request is not a valid protobuf message of this method (%v): send the message the method's proto defines, strings in UTF-8", err)
}

// statusUnary makes a handler's error a status (toStatus), so a handler
// may return the broker's error as it is, and logs a call that failed
// with Internal or Unknown: an error of a kind toStatus does not map (a
// fault to find: the client learns nothing it can act on), once per call.
func (s *Server) statusUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		err = toStatus(err)
		s.logUnexpected(info.FullMethod, err)
		return nil, err
	}
	return resp, nil
}

// statusStream is statusUnary for streaming calls.
func (s *Server) statusStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	err := toStatus(h(srv, ss))
	s.logUnexpected(info.FullMethod, err)
	return err
}

func (s *Server) logUnexpected(method string, err error) {
	if c := status.Code(err); c == codes.Internal || c == codes.Unknown {
		s.logger.Error("gRPC call failed with an error of a kind the API does not map", "method", method, "code", c.String(), "err", err)
	}
}

// reply is a handler's answer: resp, or err when the call failed (made a
// status by statusUnary).
func reply[T any](resp T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return resp, nil
}
