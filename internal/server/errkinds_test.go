package server

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/errkinds"
)

// TestToStatusTotal: every error the core exports maps to a gRPC code
// other than Unknown and Internal (but for internal faults), and a new
// exported error fails here until it is mapped.
func TestToStatusTotal(t *testing.T) {
	errkinds.Check(t, "../..", func(err error) (string, bool) {
		c := status.Code(toStatus(err))
		return c.String(), c == codes.Unknown || c == codes.Internal
	})
}
