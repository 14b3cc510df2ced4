package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logd/logd/internal/errkinds"
	"github.com/logd/logd/internal/kind"
)

// TestErrorCodeTotal: every error the core exports maps to a Kafka code
// other than UNKNOWN_SERVER_ERROR (but for internal faults), and a new
// exported error fails here until it is mapped.
func TestErrorCodeTotal(t *testing.T) {
	errkinds.Check(t, "..", func(err error) (string, bool) {
		code := errorCode(err)
		return kerr.TypedErrorForCode(code).Message, code == kerr.UnknownServerError.Code
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
		if kind.Of(m.err) != nil {
			t.Errorf("%v: a kind in errorCodes (map it in kindCodes)", m.err)
		}
	}
}
