package server

import (
	"context"
	"errors"
	"strconv"
	"syscall"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
	"github.com/logd/logd/offsets"
	"github.com/logd/logd/partition"
	"github.com/logd/logd/routing"
)

// errorDomain names logd in ErrorInfo details.
const errorDomain = "logd"

// toStatus maps an error from the storage and topic packages to a gRPC
// status. It is the only place that does.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var oor *log.OutOfRangeError
	switch {
	case errors.As(err, &oor):
		return outOfRange(oor.Offset, oor.StartOffset, oor.HighWatermark)
	case errors.Is(err, partition.ErrTopicNotFound), errors.Is(err, partition.ErrPartitionNotFound):
		return status.Error(codes.NotFound, err.Error()+" (list topics with `logd topic list`)")
	case errors.Is(err, partition.ErrTopicExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, partition.ErrInvalidConfig), errors.Is(err, routing.ErrInvalidTopicName), errors.Is(err, batch.ErrCorrupt),
		errors.Is(err, batch.ErrShort), errors.Is(err, batch.ErrUnsupported), errors.Is(err, log.ErrInvalidBatch),
		errors.Is(err, offsets.ErrInvalidArgument), errors.Is(err, offsets.ErrInvalidReset):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, partition.ErrOutOfOrderSequence):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, log.ErrClosed), errors.Is(err, partition.ErrClosed), errors.Is(err, errShuttingDown):
		return status.Error(codes.Unavailable, "the server is shutting down: retry against another node or after restart")
	case errors.Is(err, syscall.ENOSPC):
		return status.Error(codes.ResourceExhausted, "the server's disk is full: retry after an operator frees space (or retention trims)")
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return status.Error(codes.ResourceExhausted, "the server is out of file descriptors: raise its limit (ulimit -n) or use fewer partitions or connections")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, log.ErrCorrupt), errors.Is(err, offsets.ErrCorrupt):
		return status.Error(codes.DataLoss, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

var errShuttingDown = errors.New("server: shutting down")

// outOfRange is the OUT_OF_RANGE status, with the log's bounds in an
// ErrorInfo so clients can reset without another round trip.
func outOfRange(offset, start, hw int64) error {
	why := "earlier records were removed by retention"
	if offset > hw {
		why = "the next record gets offset " + strconv.FormatInt(hw, 10)
	}
	st := status.Newf(codes.OutOfRange,
		"offset %d is out of range: the log holds offsets %d to %d (%s); seek to earliest or latest",
		offset, start, hw, why)
	st2, err := st.WithDetails(&errdetails.ErrorInfo{
		Reason: "OFFSET_OUT_OF_RANGE",
		Domain: errorDomain,
		Metadata: map[string]string{
			"log_start_offset": strconv.FormatInt(start, 10),
			"high_watermark":   strconv.FormatInt(hw, 10),
		},
	})
	if err != nil {
		return st.Err()
	}
	return st2.Err()
}

func invalidArg(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}
