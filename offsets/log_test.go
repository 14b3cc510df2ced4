package offsets

import (
	"testing"
	"time"

	"github.com/logd/logd/log"
)

// *log.Log is the PartitionLog the server resolves resets against.
var _ PartitionLog = (*log.Log)(nil)

// TestResolveAgainstRealLog resolves reset targets on the real storage engine.
func TestResolveAgainstRealLog(t *testing.T) {
	l, err := log.Open(t.TempDir(), log.Options{})
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	defer l.Close()
	for _, spec := range []string{"earliest", "latest", "0", "5", "-1h"} {
		s, err := ParseResetSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Resolve(time.Now(), l)
		if err != nil {
			t.Fatalf("resolve %q on an empty log: %v", spec, err)
		}
		if got.Offset != 0 {
			t.Fatalf("resolve %q on an empty log = %+v, want offset 0", spec, got)
		}
	}
}
