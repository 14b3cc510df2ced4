package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logd/logd/internal/errkinds"
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
