package log

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncers counts the goroutines running a syncer: the FsyncAlways
// syncLoop, or an FsyncInterval sync (its timer's function, or the loop
// that ticked before).
func syncers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			s := string(buf[:n])
			return strings.Count(s, "log.(*Log).syncLoop(") + strings.Count(s, "log.(*Log).intervalSync(") +
				strings.Count(s, "log.(*Log).intervalLoop(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitSyncers waits until want syncers run, or fails.
func waitSyncers(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for syncers() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d syncer goroutines, want %d", syncers(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIdleLogHasNoSyncer (issue 19): an idle FsyncAlways log keeps no
// goroutine; a burst of writers starts one syncer, whose fsyncs they
// share (group commit), and which exits once they are durable. Writes
// after an idle spell, each one starting a syncer anew, are never left
// waiting (no lost wake-up), and a crash keeps everything acknowledged.
func TestIdleLogHasNoSyncer(t *testing.T) {
	base := syncers()
	fs := newFaultFS()
	fs.setSync(nil, time.Millisecond)
	l := mustOpen(t, fs, Options{})
	defer l.Close()
	waitSyncers(t, base)

	const writers, each = 8, 20
	appends := 0
	for range 3 {
		before := fs.syncs.Load()
		var wg sync.WaitGroup
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if _, err := l.Append(testBatch(1, 0, 10)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		appends += writers * each
		if syncs := fs.syncs.Load() - before; syncs >= writers*each {
			t.Fatalf("%d fsyncs for %d appends: no group commit", syncs, writers*each)
		}
		waitSyncers(t, base)
	}
	for range 50 {
		mustAppend(t, l, testBatch(1, 0, 10))
		appends++
		time.Sleep(50 * time.Microsecond)
	}
	waitSyncers(t, base)
	if hw := l.HighWatermark(); hw != int64(appends) {
		t.Fatalf("high watermark %d after %d acknowledged appends", hw, appends)
	}

	crashed := mustOpen(t, fs.crash(), Options{})
	defer crashed.Close()
	if next := crashed.NextOffset(); next != int64(appends) {
		t.Fatalf("after a crash the log ends at %d, %d appends were acknowledged", next, appends)
	}
}

// TestIdleIntervalLogHasNoSyncer: an idle FsyncInterval log keeps no
// goroutine either; what is written is fsynced within the interval, by a
// timer armed by the write, and is then durable.
func TestIdleIntervalLogHasNoSyncer(t *testing.T) {
	base := syncers()
	fs := newFaultFS()
	l := mustOpen(t, fs, Options{Fsync: FsyncPolicy{Mode: FsyncInterval, Interval: 5 * time.Millisecond}})
	defer l.Close()
	waitSyncers(t, base)
	for round := range 3 {
		before := fs.syncs.Load()
		for range 10 {
			mustAppend(t, l, testBatch(1, 0, 10))
		}
		deadline := time.Now().Add(5 * time.Second)
		for fs.syncs.Load() == before {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no fsync within 5s of the writes", round)
			}
			time.Sleep(time.Millisecond)
		}
		waitSyncers(t, base)
	}
	// The last sync may be under way: a crash after it keeps everything.
	deadline := time.Now().Add(5 * time.Second)
	for {
		crashed := mustOpen(t, fs.crash(), Options{})
		next := crashed.NextOffset()
		crashed.Close()
		if next == 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a crash the log ends at %d, 30 records were written and synced", next)
		}
		time.Sleep(time.Millisecond)
	}
}
