package torture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Each client of the transactional workload logs into a file of its own
// in the run's directory, at Info level and above; without a directory
// nothing logs.
func TestTxnClientsLogAFileEach(t *testing.T) {
	dir := filepath.Join(t.TempDir(), txnLogDir)
	l := &txnLogs{dir: dir}
	a := l.logger(producerLogName("torture-txn-0", 1))
	b := l.logger("reader")
	if a == nil || b == nil || len(l.opts("final-reader")) != 1 {
		t.Fatal("no logger with a directory")
	}
	a.Log(kgo.LogLevelInfo, "ending transaction", "transactional_id", "torture-txn-0", "commit", false)
	if a.Level() != kgo.LogLevelInfo { // the client logs only up to Level
		t.Fatalf("level %v, want info", a.Level())
	}
	b.Log(kgo.LogLevelWarn, "fetch failed")
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	got := read("producer-torture-txn-0-1.log")
	if !strings.Contains(got, "[INFO] ending transaction; transactional_id: torture-txn-0, commit: false") {
		t.Fatalf("producer's log %q", got)
	}
	if got := read("reader.log"); !strings.Contains(got, "[WARN] fetch failed") || strings.Contains(got, "ending") {
		t.Fatalf("reader's log %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "final-reader.log")); err != nil {
		t.Fatal(err)
	}
	var none *txnLogs
	if none.logger("x") != nil || (&txnLogs{}).opts("x") != nil || none.close() != nil {
		t.Fatal("a logger without a directory")
	}
}
