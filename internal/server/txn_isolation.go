package server

import (
	pb "github.com/logd/logd/proto/logd/v1"
)

// readCommitted is whether a read of the given isolation is read_committed
// (the default: a reader sees committed data only, docs/transactions.md),
// or a clear error for a value this server does not know.
func readCommitted(iso pb.Isolation) (bool, error) {
	switch iso {
	case pb.Isolation_ISOLATION_UNSPECIFIED, pb.Isolation_ISOLATION_READ_COMMITTED:
		return true, nil
	case pb.Isolation_ISOLATION_READ_UNCOMMITTED:
		return false, nil
	}
	return false, invalidArg("unknown isolation %d: want ISOLATION_READ_COMMITTED (the default) or ISOLATION_READ_UNCOMMITTED", int32(iso))
}
