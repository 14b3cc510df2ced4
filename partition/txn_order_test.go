package partition

import (
	"testing"
	"time"

	"github.com/logd/logd/internal/batch"
	"github.com/logd/logd/log"
)

// A single node tracks its batches in the order of their offsets even
// when two producers write at once: producer 1's batch, written first,
// is tracked before producer 2's, written after it, however late its
// tracking comes; so producer 1's transaction is open and holds the last
// stable offset at its first offset. (Tracked after producer 2's, it
// would be taken for a batch tracked already and skipped; a marker
// skipped so leaves its transaction open for good, and read_committed
// consumers stop there.)
func TestTransactionsTrackedInOffsetOrder(t *testing.T) {
	l, err := log.Open(t.TempDir(), log.Options{Fsync: log.FsyncPolicy{Mode: log.FsyncNever}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition("t", 0, l)
	hold, release := make(chan struct{}), make(chan struct{})
	p.written = func(info batch.Info) {
		if info.ProducerID == 1 {
			close(hold)
			<-release
		}
	}
	first, second := txnBatch(t, 1, 0, 1), txnBatch(t, 2, 0, 1)
	done1 := make(chan error, 1)
	go func() {
		_, err := p.StartAppend(first)
		done1 <- err
	}()
	<-hold // producer 1's batch is written at 0, not tracked yet
	done2 := make(chan error, 1)
	go func() {
		_, err := p.StartAppend(second)
		done2 <- err
	}()
	var err2 error
	select {
	case err2 = <-done2: // written at 1 and tracked before producer 1's
		close(release)
	case <-time.After(time.Second): // waits for producer 1's tracking
		close(release)
		err2 = <-done2
	}
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	if err2 != nil {
		t.Fatal(err2)
	}
	p.written = nil
	if _, err := p.Append(marker(t, 2, true)); err != nil {
		t.Fatal(err)
	}
	if got := p.LastStable(); got != 0 {
		t.Fatalf("last stable offset %d with producer 1's transaction open at 0 (open: %v)", got, p.txn.open)
	}
}
