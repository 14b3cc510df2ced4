package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// openMetaError says why Pebble could not open the metadata store, naming
// the cause an operator can act on.
func openMetaError(dataDir string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "no space left on device"):
		return fmt.Errorf("open metadata in %s: the disk under --data-dir is full: free space on its file system and start again: %w", dataDir, err)
	case errors.Is(err, syscall.EAGAIN) || strings.Contains(err.Error(), "lock"):
		return fmt.Errorf("open metadata in %s: %w (is another logd using this --data-dir?)", dataDir, err)
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS):
		return fmt.Errorf("open metadata in %s: %w (can this user write --data-dir?)", dataDir, err)
	}
	return fmt.Errorf("open metadata in %s: %w", dataDir, err)
}

// quietPebble sends Pebble's info logs nowhere and its errors to stderr,
// at most one line per pebbleErrorEvery with a count of those left out:
// a background error (a flush on a full disk) repeats in a tight loop.
type quietPebble struct{}

const pebbleErrorEvery = 10 * time.Second

var (
	pebbleLastError  atomic.Int64 // unix nanos
	pebbleSuppressed atomic.Int64
)

func (quietPebble) Infof(string, ...any) {}

func (quietPebble) Errorf(f string, args ...any) {
	now := time.Now().UnixNano()
	last := pebbleLastError.Load()
	if now-last < int64(pebbleErrorEvery) || !pebbleLastError.CompareAndSwap(last, now) {
		pebbleSuppressed.Add(1)
		return
	}
	msg := fmt.Sprintf("pebble: "+f, args...)
	if n := pebbleSuppressed.Swap(0); n > 0 {
		slog.Error(msg, "similar_errors_not_logged", n)
		return
	}
	slog.Error(msg)
}

// ExitDiskFull is the exit status of a node whose metadata store could not
// write because the disk is full. logd's own writes stop before the disk
// fills (diskGuard), so another process filled it; Pebble cannot go on
// after a failed write to its write-ahead log (like Kafka after a log
// directory fails), so the node exits, and a supervisor restarts it: it
// starts on a full disk (diskGuard.prepareStart) and refuses appends until
// space is freed.
const ExitDiskFull = 75

func (quietPebble) Fatalf(f string, args ...any) {
	msg := fmt.Sprintf("pebble: "+f, args...)
	if strings.Contains(msg, "no space left on device") {
		slog.Error(msg + " (the disk under --data-dir is full: free space on its file system; logd exits and starts again on a full disk)")
		os.Exit(ExitDiskFull)
	}
	slog.Error(msg)
	os.Exit(1)
}
