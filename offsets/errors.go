package offsets

import "errors"

// Sentinel errors. Returned errors wrap one of them with the detail (which
// group, topic, partition or value); the server maps them to gRPC codes.
var (
	// ErrInvalidArgument: a group, topic, partition, offset or metadata the
	// store refuses. Maps to INVALID_ARGUMENT.
	ErrInvalidArgument = errors.New("offsets: invalid argument")
	// ErrInvalidReset: a reset target ParseResetSpec cannot read.
	ErrInvalidReset = errors.New("offsets: invalid reset target")
	// ErrCorrupt: a stored key or value this package cannot decode.
	ErrCorrupt = errors.New("offsets: corrupt entry")
)
