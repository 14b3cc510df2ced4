package server

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/logd/logd/internal/errkinds"
	"github.com/logd/logd/internal/kind"
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

// TestKindsMappedOnce: the closed set of package kind is mapped in
// kindCodes, all of it and nothing else, and not again among the
// packages' sentinels.
func TestKindsMappedOnce(t *testing.T) {
	if len(kindCodes) != len(kind.Kinds) {
		t.Errorf("kindCodes has %d entries, kind.Kinds %d", len(kindCodes), len(kind.Kinds))
	}
	for _, k := range kind.Kinds {
		if _, ok := kindCodes[k]; !ok {
			t.Errorf("%v: not in kindCodes", k)
		}
	}
	for _, m := range errorCodes {
		for _, e := range m.errs {
			if kind.Of(e) != nil {
				t.Errorf("%v: a kind in errorCodes (map it in kindCodes)", e)
			}
		}
	}
}
