package server

import (
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// diskGuard refuses writes while the data directory's file system is
// nearly full, before a write can fail there. Logs cope with ENOSPC (the
// append fails, the log stays whole), but Pebble treats a failed WAL write
// as fatal and stops the process; so appends stop at minFree and metadata
// writes (offset commits, topic changes) only at half of it, which keeps
// room for Pebble. Like Redpanda's storage_min_free_bytes.
type diskGuard struct {
	dir     string
	minFree uint64 // appends are refused below it; 0 until first known

	mu      sync.Mutex
	checked time.Time
	free    uint64
}

// Bounds of the automatic minimum: 5% of the file system, at least 1 MiB,
// at most 1 GiB.
const (
	minFreeFloor = 1 << 20
	minFreeCeil  = 1 << 30
	// appendCheckAge is how stale the free-space figure appends use may be.
	appendCheckAge = 10 * time.Millisecond
)

func newDiskGuard(dir string, minFree int64) *diskGuard {
	g := &diskGuard{dir: dir}
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

// freeBytes returns the free space, measured at most maxAge ago.
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

// checkAppend refuses an append when free space is below the minimum. A
// cached figure may admit; only a fresh one refuses.
func (g *diskGuard) checkAppend() error {
	free := g.freeBytes(appendCheckAge)
	if free < g.minFree {
		free = g.freeBytes(0)
	}
	if free < g.minFree {
		return status.Errorf(codes.ResourceExhausted,
			"the disk under the data directory is nearly full (%d MiB free, appends stop below %d MiB): free space, or lower the topics' retention",
			free>>20, g.minFree>>20)
	}
	return nil
}

// checkMetadata refuses a metadata write when free space is below half the
// minimum.
func (g *diskGuard) checkMetadata() error {
	if free := g.freeBytes(0); free < g.minFree/2 {
		return status.Errorf(codes.ResourceExhausted,
			"the disk under the data directory is full (%d MiB free, metadata writes stop below %d MiB): free space, or lower the topics' retention",
			free>>20, g.minFree>>21)
	}
	return nil
}
