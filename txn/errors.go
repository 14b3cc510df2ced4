package txn

import (
	"fmt"

	"github.com/logd/logd/internal/kind"
)

// Code is what went wrong with a transactional request, one of Kafka's
// transaction error codes.
type Code int8

// The codes.
const (
	// CodeProducerFenced: the request's epoch is not the transactional
	// id's current one; a newer producer (or a timeout) fenced it.
	CodeProducerFenced Code = iota + 1
	// CodeInvalidState: the transaction is not in a state the request
	// may act on (an EndTxn of no transaction, a commit of an aborted
	// one, offsets for a group not added).
	CodeInvalidState
	// CodeConcurrent: the previous transaction is still being ended;
	// retry.
	CodeConcurrent
	// CodeUnknownProducer: the producer id is not the transactional id's
	// (Kafka's INVALID_PRODUCER_ID_MAPPING).
	CodeUnknownProducer
	// CodeInvalidTimeout: the transaction timeout asked is out of range.
	CodeInvalidTimeout
)

// Error is a refused transactional request. It is of a kind
// (internal/kind): failed precondition, but unavailable (retry) for
// CodeConcurrent and invalid argument for CodeInvalidTimeout and
// CodeUnknownProducer.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap is the error's kind.
func (e *Error) Unwrap() error {
	switch e.Code {
	case CodeConcurrent:
		return kind.ErrUnavailable
	case CodeInvalidTimeout, CodeUnknownProducer:
		return kind.ErrInvalidArgument
	}
	return kind.ErrFailedPrecondition
}

func errorf(c Code, format string, args ...any) error {
	return &Error{Code: c, Msg: fmt.Sprintf(format, args...)}
}
