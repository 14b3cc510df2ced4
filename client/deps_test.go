package client_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDependencies keeps the client thin: a program built on it links none
// of the server's storage (Pebble), consensus (hashicorp/raft) or metrics
// (Prometheus), and of this module only the leaf packages a client needs,
// which themselves import nothing else of ours.
func TestDependencies(t *testing.T) {
	const module = "github.com/logd/logd/"
	forbidden := []string{"github.com/cockroachdb/pebble", "github.com/hashicorp/raft", "github.com/prometheus/"}
	for _, c := range []struct {
		dir  string
		ours []string // the module's packages it may link, itself included
	}{
		// auth/tlsconfig is a leaf made for the client's TLS options.
		{".", []string{"client", "internal/batch", "proto/logd/v1", "routing", "auth/tlsconfig"}},
		{"../routing", []string{"routing"}},
		{"../internal/batch", []string{"internal/batch"}},
		{"../auth/tlsconfig", []string{"auth/tlsconfig"}},
	} {
		out, err := exec.Command("go", "list", "-deps", c.dir).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", c.dir, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s links %s: a client must not need the server's dependencies", c.dir, dep)
				}
			}
			if rel, ok := strings.CutPrefix(dep, module); ok && !slices.Contains(c.ours, rel) {
				t.Errorf("%s links %s; it may link only %v of this module", c.dir, dep, c.ours)
			}
		}
	}
}
