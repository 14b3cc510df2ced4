package client

import (
	"strconv"

	logdv1 "github.com/logd/logd/proto/logd/v1"
)

// Isolation is what a consumer sees of transactions (docs/transactions.md).
type Isolation int

const (
	// ReadCommitted (the default) reads committed data only: each
	// partition up to its last stable offset (before its oldest open
	// transaction), without the records of aborted transactions.
	ReadCommitted Isolation = iota
	// ReadUncommitted reads every record up to the high watermark, those
	// of open and aborted transactions included.
	ReadUncommitted
)

// String is the isolation's name, as the CLI and HTTP spell it.
func (i Isolation) String() string {
	switch i {
	case ReadCommitted:
		return "read_committed"
	case ReadUncommitted:
		return "read_uncommitted"
	}
	return "Isolation(" + strconv.Itoa(int(i)) + ")"
}

// proto is the isolation on the wire; a value this package does not
// define is sent as one the server does not know either (it refuses it
// with a clear error).
func (i Isolation) proto() logdv1.Isolation {
	switch i {
	case ReadCommitted:
		return logdv1.Isolation_ISOLATION_READ_COMMITTED
	case ReadUncommitted:
		return logdv1.Isolation_ISOLATION_READ_UNCOMMITTED
	}
	return logdv1.Isolation(100 + int32(i))
}
