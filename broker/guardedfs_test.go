package broker

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/logd/logd/log"
)

// A guarded log file refuses a write that would bring free space below
// three quarters of the minimum, as ENOSPC and before a byte is written,
// once the node serves; before, recovery's writes pass. A refused write
// leaves no bytes counted in flight.
func TestGuardedFSRefusesBelowTheFloor(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var serving atomic.Bool
	full := guardedFS{FS: log.OSFS{}, g: newDiskGuard(dir, 1<<61, quiet), serving: &serving}
	name := filepath.Join(dir, "f")
	f, err := full.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := f.WriteAt([]byte("recovery"), 0); err != nil || n != 8 {
		t.Fatalf("a write before serving: %d %v, want it through", n, err)
	}
	serving.Store(true)
	n, err := f.WriteAt([]byte("appended"), 8)
	if !errors.Is(err, syscall.ENOSPC) || n != 0 {
		t.Fatalf("a write on a full disk: %d %v, want 0 and ENOSPC", n, err)
	}
	if st, err := os.Stat(name); err != nil || st.Size() != 8 {
		t.Fatalf("the file after a refused write: %v %v, want 8 bytes", st.Size(), err)
	}
	if in := full.g.inflight.Load(); in != 0 {
		t.Fatalf("%d bytes in flight after a refused write, want 0", in)
	}
	if err := full.g.checkAppend(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("checkAppend on a full disk: %v, want ErrDiskFull", err)
	}
	if err := full.g.checkMetadata(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("checkMetadata on a full disk: %v, want ErrDiskFull", err)
	}

	roomy := guardedFS{FS: log.OSFS{}, g: newDiskGuard(dir, 1<<20, quiet), serving: &serving}
	g, err := roomy.OpenFile(name, os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if n, err := g.WriteAt([]byte("appended"), 8); err != nil || n != 8 {
		t.Fatalf("a write with room: %d %v", n, err)
	}
	if in := roomy.g.inflight.Load(); in != 0 {
		t.Fatalf("%d bytes in flight after a write, want 0", in)
	}
	if err := roomy.g.checkAppend(); err != nil {
		t.Fatalf("checkAppend with room: %v", err)
	}
	// With room, checkAppend makes the reserve in the background; it must
	// be done before the test's directory is removed.
	roomy.g.wait()
	// Twice the free space: other processes freeing space meanwhile
	// cannot make room for it.
	if err := roomy.g.admitWrite(2 * int64(roomy.g.freeBytes(0))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("admitting a write of twice the free space: %v, want ENOSPC", err)
	}
	if in := roomy.g.inflight.Load(); in != 0 {
		t.Fatalf("%d bytes in flight after a refused admission, want 0", in)
	}
}

// With no minimum given, the guard's is 5% of the file system, between
// 1 MiB and 1 GiB; the reserve is half of it, at most 64 MiB.
func TestDiskGuardDefaultMinimum(t *testing.T) {
	dir := t.TempDir()
	g := newDiskGuard(dir, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	total, _, err := statfs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := min(max(total/20, 1<<20), 1<<30); g.minFree != want {
		t.Fatalf("minimum %d on a file system of %d bytes, want %d", g.minFree, total, want)
	}
	if r := g.reserveBytes(); r != int64(min(g.minFree/2, 64<<20)) {
		t.Fatalf("reserve %d for a minimum of %d", r, g.minFree)
	}
	if g := newDiskGuard(filepath.Join(dir, "missing"), 0, nil); g.minFree != 1<<20 {
		t.Fatalf("minimum where statfs fails: %d, want 1 MiB", g.minFree)
	}
}
