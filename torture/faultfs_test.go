package torture

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestFaultFS(t *testing.T) {
	fs := NewFaultFS()
	name := filepath.Join(t.TempDir(), "seg.log")
	f, err := fs.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(off int64, n int) error {
		_, err := f.WriteAt(make([]byte, n), off)
		return err
	}
	if err := write(0, 100); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	fs.SetFull(true)
	if err := write(100, 10); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v, want ENOSPC", err)
	}
	if err := write(0, 10); err != nil {
		t.Fatalf("an overwrite needs no space: %v", err)
	}
	fs.SetFull(false)
	if err := write(100, 50); err != nil {
		t.Fatal(err)
	}
	fs.Crash()
	if err := write(150, 1); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write after a crash: %v, want EIO", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync after a crash: %v, want EIO", err)
	}
	lost, err := fs.LoseUnsynced()
	if err != nil || lost != 50 {
		t.Fatalf("lost %d bytes (%v), want the 50 never fsynced", lost, err)
	}
	if size, _ := fs.Stat(name); size != 100 {
		t.Fatalf("size after the crash %d, want 100", size)
	}
	if err := write(100, 1); err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
}

// A crash that lands while an fsync is under way fails that fsync: what
// it was making durable is cut by LoseUnsynced, so a node must not be told
// it is durable (it would acknowledge a record the crash then loses).
func TestFaultFSCrashDuringSyncFailsIt(t *testing.T) {
	fs := NewFaultFS()
	name := filepath.Join(t.TempDir(), "seg.log")
	f, err := fs.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 100), 0); err != nil {
		t.Fatal(err)
	}
	fs.SetSyncDelay(300 * time.Millisecond)
	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }()
	time.Sleep(100 * time.Millisecond) // the fsync has begun
	fs.Crash()
	if err := <-synced; !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync during which the crash landed: %v, want EIO", err)
	}
	if lost, err := fs.LoseUnsynced(); err != nil || lost != 100 {
		t.Fatalf("lost %d bytes (%v), want the 100 the failed fsync did not make durable", lost, err)
	}
}
