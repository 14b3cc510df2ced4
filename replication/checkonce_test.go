package replication

import (
	"errors"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/logd/logd/internal/batch"
)

// crcCount counts CRC computations of batches (batch.SetChecksumHook) by
// the address of the batch's first byte, until the test ends.
type crcCount struct {
	mu sync.Mutex
	n  map[*byte]int
}

func countCRCs(t testing.TB) *crcCount {
	c := &crcCount{n: map[*byte]int{}}
	batch.SetChecksumHook(func(b []byte) {
		c.mu.Lock()
		c.n[&b[0]]++
		c.mu.Unlock()
	})
	t.Cleanup(func() { batch.SetChecksumHook(nil) })
	return c
}

func (c *crcCount) of(b []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[&b[0]]
}

// A follower's log store checks each batch it receives once (its frame and
// CRC), and refuses one whose CRC is wrong; a leader's takes the batches
// it started (Replica.Start) as checked, computing no CRC.
func TestStoreLogsChecksReceivedBatchesOnce(t *testing.T) {
	l := openLog(t, t.TempDir())
	defer l.Close()
	s := NewLogStore(l)
	es := entries(1, 1, raft.LogCommand, raft.LogConfiguration, raft.LogCommand, raft.LogCommand)
	mine := s.startEntry(validated(t, es[3].Data), nil) // started here
	n := countCRCs(t)
	if err := s.StoreLogs(es); err != nil {
		t.Fatal(err)
	}
	mine.settle()
	for _, i := range []int{0, 2} {
		if got := n.of(es[i].Data); got != 1 {
			t.Errorf("received batch at index %d: %d CRCs, want 1", es[i].Index, got)
		}
	}
	if got := n.of(es[3].Data); got != 0 {
		t.Errorf("batch started here: %d CRCs in the store, want 0", got)
	}
	checkStore(t, s, es)

	bad := entries(5, 1, raft.LogCommand)
	bad[0].Data[len(bad[0].Data)-1] ^= 1
	if err := s.StoreLogs(bad); !errors.Is(err, ErrNotBatch) || !errors.Is(err, batch.ErrCorrupt) {
		t.Fatalf("a batch with a wrong CRC: %v, want ErrNotBatch and batch.ErrCorrupt", err)
	}
	if last, _ := s.LastIndex(); last != 4 {
		t.Fatalf("last index %d after a refused batch, want 4", last)
	}
}
