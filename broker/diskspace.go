package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logd/logd/internal/atomicfile"
	"github.com/logd/logd/internal/kind"
)

// diskGuard refuses writes while the data directory's file system is
// nearly full, before a write can fail there. Logs cope with ENOSPC (the
// append fails, the log stays whole), but Pebble treats a failed WAL write
// as fatal and stops the process; so appends stop at minFree and metadata
// writes (offset commits, topic changes) only at half of it, which keeps
// room for Pebble. Like Redpanda's storage_min_free_bytes.
//
// The guard is never overshot: the logs' writes go through it
// (guardedFS), each reserving its bytes before it is issued, so that
// concurrent appends admitted on one free-space figure cannot together
// pass the floor; a write that would is refused as ENOSPC before a byte
// is written.
//
// A node must also start on a full disk, and be able to lower retention
// there. So the guard keeps a reserve file (spaceReserveFile, reserveBytes)
// in the data directory, like CockroachDB's emergency ballast: a node that
// starts with less than half of minFree free deletes it first, so that
// Pebble can open and take retention changes and topic deletions; it then
// serves reads and refuses appends with RESOURCE_EXHAUSTED until space is
// freed, and makes the reserve again once there is room for it.
type diskGuard struct {
	dir     string
	minFree uint64 // appends are refused below it; 0 until first known
	logger  *slog.Logger

	mu      sync.Mutex
	checked time.Time
	free    uint64

	inflight  atomic.Int64 // bytes of log writes admitted, not yet done
	lastWarn  atomic.Int64 // unix nanos of the last "disk full" line
	restoring atomic.Bool  // the reserve is being made again
	making    sync.WaitGroup
}

// Bounds of the automatic minimum: 5% of the file system, at least 1 MiB,
// at most 1 GiB.
const (
	minFreeFloor = 1 << 20
	minFreeCeil  = 1 << 30
	// appendCheckAge is how stale the free-space figure appends use may be.
	appendCheckAge = 10 * time.Millisecond
	// spaceReserveFile is the reserve's name in the data directory.
	spaceReserveFile = "space-reserve"
	// maxReserveBytes caps the reserve: Pebble needs little to open and
	// take a few small writes.
	maxReserveBytes = 64 << 20
	// remedyFloor is the free space below which even the writes that free
	// space (a retention change: a few hundred bytes in Pebble) are
	// refused.
	remedyFloor = 64 << 10
	// diskFullLogEvery rate-limits the "disk full" log line.
	diskFullLogEvery = time.Minute
)

func newDiskGuard(dir string, minFree int64, logger *slog.Logger) *diskGuard {
	g := &diskGuard{dir: dir, logger: logger}
	if minFree > 0 {
		g.minFree = uint64(minFree)
	} else if total, _, err := statfs(dir); err == nil {
		g.minFree = min(max(total/20, minFreeFloor), minFreeCeil)
	} else {
		g.minFree = minFreeFloor
	}
	return g
}

func statfs(dir string) (total, free uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), nil
}

// freeBytes returns the free space, measured at most maxAge ago, less the
// log writes admitted since.
func (g *diskGuard) freeBytes(maxAge time.Duration) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := time.Now(); maxAge <= 0 || now.Sub(g.checked) > maxAge {
		if _, free, err := statfs(g.dir); err == nil {
			g.free, g.checked = free, now
		} else {
			return ^uint64(0) // unknown: do not refuse on a failed statfs
		}
	}
	return g.free
}

// available is the free space less the log writes in flight.
func (g *diskGuard) available(maxAge time.Duration) uint64 {
	free, in := g.freeBytes(maxAge), uint64(max(g.inflight.Load(), 0))
	if free == ^uint64(0) || in >= free {
		return min(free, free-in)
	}
	return free - in
}

// checkAppend refuses an append when free space is below the minimum. A
// cached figure may admit; only a fresh one refuses.
func (g *diskGuard) checkAppend() error {
	free := g.available(appendCheckAge)
	if free < g.minFree {
		free = g.available(0)
	}
	if free < g.minFree {
		g.warnFull(free)
		return kind.Errorf(ErrDiskFull,
			"the disk under the data directory is nearly full (%d MiB free, appends stop below %d MiB): free space, or lower the topics' retention",
			free>>20, g.minFree>>20)
	}
	g.maybeRestoreReserve(free)
	return nil
}

// checkMetadata refuses a metadata write when free space is below half the
// minimum.
func (g *diskGuard) checkMetadata() error {
	if free := g.available(0); free < g.minFree/2 {
		g.warnFull(free)
		return kind.Errorf(ErrDiskFull,
			"the disk under the data directory is full (%d MiB free, metadata writes stop below %d MiB): free space, or lower the topics' retention",
			free>>20, g.minFree>>21)
	}
	return nil
}

// checkRemedy refuses a write that frees space (a retention change) only
// when even its few bytes may not fit.
func (g *diskGuard) checkRemedy() error {
	if free := g.available(0); free < remedyFloor {
		return kind.Errorf(ErrDiskFull,
			"the disk under the data directory is full (%d KiB free): free space outside logd (or delete a topic) first", free>>10)
	}
	return nil
}

// warnFull logs that writes are refused, at most once per diskFullLogEvery.
func (g *diskGuard) warnFull(free uint64) {
	now := time.Now().UnixNano()
	last := g.lastWarn.Load()
	if now-last < int64(diskFullLogEvery) || !g.lastWarn.CompareAndSwap(last, now) {
		return
	}
	g.logger.Warn("the disk under --data-dir is nearly full: appends are refused (reads, retention changes and topic deletions still work); lower retention with `logd topic alter`, delete topics, or free space",
		"free_bytes", free, "min_free_bytes", g.minFree)
}

// errLogWriteRefused is the error of a log write the guard refuses: it
// wraps ENOSPC, which the logs treat as a failed append and the API maps
// to RESOURCE_EXHAUSTED.
var errLogWriteRefused = fmt.Errorf("log write refused: the disk under the data directory is nearly full: %w", syscall.ENOSPC)

// admitWrite reserves n bytes for a log write, or refuses it when the
// write would bring free space below three quarters of the minimum (the
// quarter below stays for Pebble: metadata writes stop at half).
func (g *diskGuard) admitWrite(n int64) error {
	floor := g.minFree / 4 * 3
	in := g.inflight.Add(n)
	if free := g.freeBytes(appendCheckAge); free == ^uint64(0) || int64(free)-in >= int64(floor) {
		return nil
	}
	if free := g.freeBytes(0); int64(free)-in >= int64(floor) {
		return nil
	}
	g.inflight.Add(-n)
	return errLogWriteRefused
}

// doneWrite ends a write admitted by admitWrite: its bytes now count in
// the cached free space (until the next statfs measures them).
func (g *diskGuard) doneWrite(n int64) {
	g.mu.Lock()
	g.free -= min(uint64(n), g.free)
	g.mu.Unlock()
	g.inflight.Add(-n)
}

// reserveBytes is the reserve's size: half the minimum, at most
// maxReserveBytes.
func (g *diskGuard) reserveBytes() int64 { return int64(min(g.minFree/2, maxReserveBytes)) }

// prepareStart runs before Pebble opens: on a full disk (less than half
// the minimum free) it deletes the reserve so that Pebble has room, and
// otherwise it makes the reserve when there is room for it.
func (g *diskGuard) prepareStart() {
	path := filepath.Join(g.dir, spaceReserveFile)
	os.Remove(path + atomicfile.TempSuffix) // a reserve being made when the node stopped
	free := g.available(0)
	if free >= g.minFree/2 {
		g.maybeRestoreReserve(free)
		return
	}
	if err := os.Remove(path); err == nil {
		g.freeBytes(0)
		g.logger.Warn("the disk under --data-dir is full: deleted the space reserve so the node can start; appends are refused until space is freed (lower retention with `logd topic alter`, delete topics, or free space)",
			"free_bytes", free, "reserve_bytes", g.reserveBytes(), "reserve", path)
		return
	} else if !errors.Is(err, fs.ErrNotExist) {
		g.logger.Warn("could not delete the space reserve", "reserve", path, "err", err)
	}
	g.logger.Warn("the disk under --data-dir is full and there is no space reserve to release: the node may fail to open its metadata; free space on the file system",
		"free_bytes", free)
}

// maybeRestoreReserve makes the reserve again, in the background, when it
// is missing and free space allows it without going below the minimum.
func (g *diskGuard) maybeRestoreReserve(free uint64) {
	n := g.reserveBytes()
	if free == ^uint64(0) || free < g.minFree+uint64(n) || !g.restoring.CompareAndSwap(false, true) {
		return
	}
	g.making.Add(1)
	go func() {
		defer g.making.Done()
		defer g.restoring.Store(false)
		path := filepath.Join(g.dir, spaceReserveFile)
		if st, err := os.Stat(path); err == nil && st.Size() >= n {
			return
		}
		if err := makeReserve(path, n); err != nil {
			g.logger.Warn("could not make the space reserve", "reserve", path, "err", err)
		}
	}()
}

// wait waits for a reserve being made in the background.
func (g *diskGuard) wait() { g.making.Wait() }

// makeReserve allocates a file of n bytes (written, not sparse), through a
// temporary name so that a half-made reserve is never taken for one.
func makeReserve(path string, n int64) error {
	return atomicfile.Write(path, 0o600, func(f *os.File) error {
		err := unix.Fallocate(int(f.Fd()), 0, 0, n)
		if errors.Is(err, unix.EOPNOTSUPP) {
			_, err = f.Write(make([]byte, n))
		}
		return err
	})
}
