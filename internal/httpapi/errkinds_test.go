package httpapi

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/logd/logd/internal/errkinds"
)

// TestErrorStatusTotal: every error the core exports maps to an HTTP
// status other than 500 (but for internal faults), and a new exported
// error fails here until it is mapped.
func TestErrorStatusTotal(t *testing.T) {
	errkinds.Check(t, "../..", func(err error) (string, bool) {
		st, _ := errorStatus(err)
		return strconv.Itoa(st), st == http.StatusInternalServerError
	})
}
