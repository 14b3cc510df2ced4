package client

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Errors the client returns wrap one of these, or a gRPC
// status (use status.Code on them: errors.As-compatible wrapping is kept).
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
	// ErrInvalidRecord is returned for a record the producer cannot route
	// (no topic, a partition the topic does not have).
	ErrInvalidRecord = errors.New("client: invalid record")
)

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
