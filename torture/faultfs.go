package torture

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/logd/logd/log"
)

// FaultFS is the file system of an in-process node's logs: the operating
// system's, with the faults a disk has injected on demand. A full disk
// fails every write and every growth of a file with ENOSPC; a slow disk
// delays every fsync; a crash (Crash, then LoseUnsynced once the node has
// stopped) fails every write and fsync from then on and cuts each file
// back to what its last fsync made durable, as a power cut would (in-place
// overwrites below that size and unsynced directory entries survive: the
// crash is weaker than a real one there, never stronger).
type FaultFS struct {
	inner log.FS

	mu        sync.Mutex
	full      bool
	syncDelay time.Duration
	crashed   bool
	// synced is, for each file written since it was opened, the size its
	// last fsync made durable (the size it had when opened before that).
	synced map[string]int64
}

// NewFaultFS returns a FaultFS over the operating system's file system.
func NewFaultFS() *FaultFS { return &FaultFS{inner: log.OSFS{}, synced: map[string]int64{}} }

// SetFull fills (true) or frees the disk.
func (f *FaultFS) SetFull(full bool) {
	f.mu.Lock()
	f.full = full
	f.mu.Unlock()
}

// SetSyncDelay makes every fsync take d longer (0: none).
func (f *FaultFS) SetSyncDelay(d time.Duration) {
	f.mu.Lock()
	f.syncDelay = d
	f.mu.Unlock()
}

// Crash makes every later write and fsync fail with EIO, as if the machine
// had stopped: call it before stopping the node that uses f.
func (f *FaultFS) Crash() {
	f.mu.Lock()
	f.crashed = true
	f.mu.Unlock()
}

// LoseUnsynced cuts every file written since its last fsync back to its
// durable size, then ends the crash: the disk as the restarted node finds
// it. It returns the bytes lost.
func (f *FaultFS) LoseUnsynced() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var lost int64
	var errs []error
	for name, durable := range f.synced {
		size, err := f.inner.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if size > durable {
			lost += size - durable
			errs = append(errs, os.Truncate(name, durable))
		}
	}
	f.recoverLocked()
	return lost, errors.Join(errs...)
}

// Recover ends a crash keeping what was written (a kill -9: the page
// cache survives).
func (f *FaultFS) Recover() {
	f.mu.Lock()
	f.recoverLocked()
	f.mu.Unlock()
}

func (f *FaultFS) recoverLocked() {
	f.crashed = false
	clear(f.synced)
}

func (f *FaultFS) check(op, name string, grows bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.crashed:
		return &fs.PathError{Op: op, Path: name, Err: syscall.EIO}
	case f.full && grows:
		return &fs.PathError{Op: op, Path: name, Err: syscall.ENOSPC}
	}
	return nil
}

// track notes that name is about to change, keeping its durable size.
func (f *FaultFS) track(name string, durable int64) {
	f.mu.Lock()
	if _, ok := f.synced[name]; !ok {
		f.synced[name] = durable
	}
	f.mu.Unlock()
}

func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	writes := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if writes {
		if err := f.check("open", name, false); err != nil {
			return nil, err
		}
	}
	size, err := f.inner.Stat(name)
	if err != nil {
		size = 0
	}
	if flag&os.O_TRUNC != 0 {
		size = 0
	}
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if writes {
		f.track(name, size)
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *FaultFS) ReadDir(dir string) ([]string, error) { return f.inner.ReadDir(dir) }
func (f *FaultFS) Stat(name string) (int64, error)      { return f.inner.Stat(name) }
func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	// Like a real full disk: only a directory to be made needs space.
	_, statErr := os.Stat(dir)
	if err := f.check("mkdir", dir, statErr != nil); err != nil {
		return err
	}
	return f.inner.MkdirAll(dir, perm)
}

func (f *FaultFS) Remove(name string) error {
	if err := f.check("remove", name, false); err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.synced, name)
	f.mu.Unlock()
	return f.inner.Remove(name)
}

func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.check("rename", newname, false); err != nil {
		return err
	}
	if err := f.inner.Rename(oldname, newname); err != nil {
		return err
	}
	f.mu.Lock()
	if d, ok := f.synced[oldname]; ok {
		f.synced[newname] = d
		delete(f.synced, oldname)
	}
	f.mu.Unlock()
	return nil
}

func (f *FaultFS) SyncDir(dir string) error {
	if err := f.check("syncdir", dir, false); err != nil {
		return err
	}
	return f.inner.SyncDir(dir)
}

type faultFile struct {
	log.File
	fs   *FaultFS
	name string
}

func (ff *faultFile) WriteAt(b []byte, off int64) (int, error) {
	size, _ := ff.File.Size()
	if err := ff.fs.check("write", ff.name, off+int64(len(b)) > size); err != nil {
		return 0, err
	}
	return ff.File.WriteAt(b, off)
}

func (ff *faultFile) Truncate(size int64) error {
	cur, _ := ff.File.Size()
	if err := ff.fs.check("truncate", ff.name, size > cur); err != nil {
		return err
	}
	return ff.File.Truncate(size)
}

// Sync is an fsync that takes the delay set (a slow disk) after the data
// reached the disk. It reports success only when the FaultFS was not
// crashed at any point of it: a crash that lands during an fsync leaves
// what it wrote undurable (LoseUnsynced cuts it), so the fsync must fail,
// as a process killed inside fsync never sees it return. (An fsync that
// returned nil while a crash landed meanwhile once let a node acknowledge
// a batch the kill then cut: a loss the harness made, not logd.)
func (ff *faultFile) Sync() error {
	if err := ff.fs.check("sync", ff.name, false); err != nil {
		return err
	}
	size, err := ff.File.Size()
	if err != nil {
		return err
	}
	if err := ff.File.Sync(); err != nil {
		return err
	}
	ff.fs.mu.Lock()
	delay := ff.fs.syncDelay
	ff.fs.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	if ff.fs.crashed {
		return &fs.PathError{Op: "sync", Path: ff.name, Err: syscall.EIO}
	}
	ff.fs.synced[ff.name] = size
	return nil
}
