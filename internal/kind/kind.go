package kind

import (
	"errors"
	"fmt"
)

// The kinds. Their texts are what a bare kind (one not made by Errorf)
// says.
var (
	// ErrInvalidArgument: the request is wrong; its message says how.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrFailedPrecondition: the request cannot be done in this state
	// (a node that runs alone, the last node of a cluster).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnavailable: not now, retry (an election, a node catching up).
	ErrUnavailable = errors.New("unavailable")
	// ErrNoLeader: what the request needs has no leader known right now
	// (cluster.NotLeaderError matches it when it names no leader).
	ErrNoLeader = errors.New("no leader")
	// ErrShuttingDown: the node is stopping.
	ErrShuttingDown = errors.New("server: shutting down")
)

// Kinds is the closed set, in the order Of tests it.
var Kinds = []error{ErrShuttingDown, ErrNoLeader, ErrUnavailable, ErrFailedPrecondition, ErrInvalidArgument}

// Of is the kind err is of (the first of Kinds errors.Is matches), or nil
// when it is of none.
func Of(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range Kinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// kindError is an error of a kind whose message is its text alone.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Errorf is an error of kind k (errors.Is(err, k)) with the formatted
// message, without k's name in it. k may be any sentinel, not only one of
// Kinds.
func Errorf(k error, format string, args ...any) error {
	return &kindError{kind: k, msg: fmt.Sprintf(format, args...)}
}
