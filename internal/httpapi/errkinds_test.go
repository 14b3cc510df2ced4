package httpapi

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/logd/logd/internal/errkinds"
	"github.com/logd/logd/internal/kind"
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

// TestKindsMappedOnce: the closed set of package kind is mapped in
// kindStatus, all of it and nothing else, and not again among the
// packages' sentinels.
func TestKindsMappedOnce(t *testing.T) {
	if len(kindStatus) != len(kind.Kinds) {
		t.Errorf("kindStatus has %d entries, kind.Kinds %d", len(kindStatus), len(kind.Kinds))
	}
	for _, k := range kind.Kinds {
		if _, ok := kindStatus[k]; !ok {
			t.Errorf("%v: not in kindStatus", k)
		}
	}
	for _, m := range statusOf {
		if kind.Of(m.err) != nil {
			t.Errorf("%v: a kind in statusOf (map it in kindStatus)", m.err)
		}
	}
	for _, e := range badInput {
		if kind.Of(e) != nil {
			t.Errorf("%v: a kind in badInput (map it in kindStatus)", e)
		}
	}
}
