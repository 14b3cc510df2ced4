package torture

import (
	"os"
	"testing"
)

// txnFromEnv is TORTURE_TXN: 1 or unset runs the transactional workload
// beside the main one, 0 does not.
func txnFromEnv(t *testing.T) *TxnConfig {
	switch s := os.Getenv("TORTURE_TXN"); s {
	case "", "1":
		return &TxnConfig{}
	case "0":
		return nil
	default:
		t.Fatalf("TORTURE_TXN=%q: want 0 or 1", s)
		return nil
	}
}
