package log

import (
	"context"
	"fmt"
	"time"
)

// Group commit and the high watermark.
//
// Appenders write under l.mu and, with FsyncAlways, wait on l.durable until
// l.synced covers their bytes. A syncer goroutine loops: take l.written,
// fdatasync outside the lock, publish it as l.synced, wake everyone. Appends
// that arrive during an fsync are covered by the next one (group commit:
// many writers, one fsync).
//
// The syncer runs only while there is something to sync (a node may
// hold thousands of idle logs, and a syncer parked per log would be a
// goroutine each for nothing). The write that finds no syncer running
// starts one (l.syncing); the syncer exits once l.synced has caught up
// with l.written, or an fsync failed. Both decisions are taken under l.mu,
// so none is lost: a write either precedes the syncer's last check (which
// then sees it and syncs again) or follows its exit (and starts the next
// one). Invariant: l.written.seq != l.synced.seq with no failure means a
// syncer runs, or Close has begun and syncs what is left itself. Close
// waits for a running syncer (l.wg), which finishes its fsyncs first.

// wroteLocked follows a write: with FsyncAlways it makes sure a syncer
// runs, so the fsync starts before anyone waits for it; otherwise what is
// written is durable per the policy and the high watermark moves now. It
// returns the truncation generation the write belongs to, for
// waitDurableLocked.
func (l *Log) wroteLocked() (gen uint64) {
	switch l.opts.Fsync.Mode {
	case FsyncAlways:
		l.startSyncerLocked()
	case FsyncInterval:
		l.publishLocked()
		l.scheduleSyncLocked()
	default:
		l.publishLocked()
	}
	return l.gen
}

// startSyncerLocked starts the FsyncAlways syncer if there is something
// to sync and none runs. Not once Close has begun: writes are refused
// then, and Close syncs what is left after waiting for the syncer, so the
// WaitGroup never grows while Close waits on it.
func (l *Log) startSyncerLocked() {
	if l.syncing || l.closing || l.failed != nil || l.written.seq == l.synced.seq {
		return
	}
	l.syncing = true
	l.wg.Add(1)
	go l.syncLoop()
}

// waitDurableLocked returns once the bytes up to seq, written in
// generation gen, are durable per the fsync policy. The syncer publishes
// them (moves the high watermark) before waking the waiters.
func (l *Log) waitDurableLocked(seq, gen uint64) error {
	if l.opts.Fsync.Mode != FsyncAlways {
		return nil
	}
	for l.synced.seq < seq {
		switch {
		case l.gen != gen:
			return errTruncated
		case l.failed != nil:
			return l.failed
		case l.closed:
			return ErrClosed
		}
		// A no-op by the invariant above; cheap insurance against a path
		// that moved l.written without wroteLocked.
		l.startSyncerLocked()
		l.durable.Wait()
	}
	if l.gen != gen {
		return errTruncated
	}
	return nil
}

// syncLoop is the FsyncAlways syncer, started by startSyncerLocked: it
// fsyncs until everything written is synced, or an fsync fails (then
// nothing more can be made durable), and exits.
func (l *Log) syncLoop() {
	defer l.wg.Done()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.written.seq != l.synced.seq && l.failed == nil {
		l.syncOnceLocked()
	}
	l.syncing = false
}

// scheduleSyncLocked makes sure an FsyncInterval sync is due within the
// interval of what was just written: a timer, not a goroutine ticking for
// an idle log. Close stops a due one and syncs what is left itself.
func (l *Log) scheduleSyncLocked() {
	if l.syncDue || l.closing || l.failed != nil || l.written.seq == l.synced.seq {
		return
	}
	l.syncDue = true
	l.wg.Add(1) // done by intervalSync, or by Close if it stops the timer
	if l.syncTimer == nil {
		l.syncTimer = time.AfterFunc(l.opts.Fsync.Interval, l.intervalSync)
	} else {
		l.syncTimer.Reset(l.opts.Fsync.Interval)
	}
}

// intervalSync is the FsyncInterval sync, run by the timer.
func (l *Log) intervalSync() {
	defer l.wg.Done()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncDue = false
	if l.closing {
		return // Close syncs what is left
	}
	if l.written.seq != l.synced.seq && l.failed == nil {
		l.syncOnceLocked()
	}
	l.scheduleSyncLocked() // for what was written during the fsync
}

// stopSyncTimerLocked cancels a due FsyncInterval sync, for Close; one
// already running ends by itself (it sees l.closing).
func (l *Log) stopSyncTimerLocked() {
	if l.syncDue && l.syncTimer.Stop() {
		l.syncDue = false
		l.wg.Done()
	}
}

// syncOnceLocked fsyncs the active segment with l.mu released during the
// fsync, then publishes what it covered.
func (l *Log) syncOnceLocked() {
	target, s, gen := l.written, l.active, l.gen
	s.refs++
	f := s.h.f
	l.mu.Unlock()
	err := timedSync(f, l.opts.Hooks.Fsync)
	l.mu.Lock()
	l.releaseLocked(s)
	if err != nil {
		if l.failed == nil {
			l.failed = fmt.Errorf("log: fsync %s: %w (appends refused until the log is reopened)", s.path(), err)
		}
	} else if gen == l.gen && target.seq > l.synced.seq {
		// A truncation during the fsync already synced and published its
		// own state; this target is then stale.
		l.synced = target
		l.publishLocked()
	}
	l.durable.Broadcast()
}

// durableNextLocked is the offset below which records are durable per the
// fsync policy.
func (l *Log) durableNextLocked() int64 {
	if l.opts.Fsync.Mode == FsyncAlways {
		return l.synced.next
	}
	return l.written.next
}

// publishLocked moves the high watermark to the durable end, unless the
// owner moves it.
func (l *Log) publishLocked() {
	if !l.opts.ManualHighWatermark {
		l.setHWLocked(l.durableNextLocked())
	}
}

func (l *Log) setHWLocked(hw int64) {
	if hw == l.hw || l.closed {
		return
	}
	l.hw = hw
	close(l.changed)
	l.changed = make(chan struct{})
}

// SetHighWatermark moves the high watermark (ManualHighWatermark logs only),
// clamped to what is durable. It should be a batch boundary: Read returns
// whole batches that start below it.
func (l *Log) SetHighWatermark(off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opts.ManualHighWatermark {
		return
	}
	l.setHWLocked(max(l.start, min(off, l.durableNextLocked())))
}

// Changed returns a channel closed at the next move of the high watermark
// (or at Close). Waiters take the channel, re-check, then wait on it.
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Wait blocks until the high watermark passes offset, ctx ends, or the log
// closes.
func (l *Log) Wait(ctx context.Context, offset int64) error {
	for {
		l.mu.Lock()
		hw, ch, closed := l.hw, l.changed, l.closed || l.closing
		l.mu.Unlock()
		if hw > offset {
			return nil
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}
