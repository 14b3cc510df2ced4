package torture

import (
	"os"
	"testing"
)

// shareFromEnv is the share-group workload TORTURE_SHARE asks for: 1
// runs it, 0 or unset does not.
func shareFromEnv(t *testing.T) *ShareConfig {
	switch s := os.Getenv("TORTURE_SHARE"); s {
	case "1":
		return &ShareConfig{}
	case "", "0":
		return nil
	default:
		t.Fatalf("TORTURE_SHARE=%q: want 0 or 1", s)
		return nil
	}
}
