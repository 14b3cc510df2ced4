package torture

import (
	"os"
	"testing"
)

// shareFromEnv is the share-group workload TORTURE_SHARE asks for: 1 or
// unset runs it, ordered runs it with per-key ordering (8 keys), 0 does
// not.
func shareFromEnv(t *testing.T) *ShareConfig {
	switch s := os.Getenv("TORTURE_SHARE"); s {
	case "", "1":
		return &ShareConfig{}
	case "ordered":
		return &ShareConfig{Keys: 8}
	case "0":
		return nil
	default:
		t.Fatalf("TORTURE_SHARE=%q: want 0, 1 or ordered", s)
		return nil
	}
}
