package log

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// faultFS is an in-memory FS that injects the faults a disk has: running
// out of space after N bytes, torn (partial) writes, failing or slow
// fsyncs, and crashes that lose everything not fsynced (file data not
// Synced, directory changes not SyncDir'd).
type faultFS struct {
	mu      sync.Mutex
	files   map[string]*inode // the namespace now
	durable map[string]*inode // the namespace as of the last SyncDir

	spaceLeft int64 // bytes writable before ENOSPC; < 0: unlimited
	tearAfter int64 // the next write stops after this many bytes; < 0: off
	syncErr   error
	syncDelay time.Duration
	syncs     atomic.Int64
	openFiles atomic.Int64
	// before, when set, is called (with no lock held) before every
	// operation that changes the file system: a test crashes there.
	before func(op, name string)
}

type inode struct {
	mu        sync.Mutex
	data      []byte
	synced    []byte
	dirtyFrom int // lowest byte changed since the last Sync
}

type faultFile struct {
	fs       *faultFS
	ino      *inode
	name     string
	writable bool
	closed   atomic.Bool
}

func newFaultFS() *faultFS {
	return &faultFS{files: map[string]*inode{}, durable: map[string]*inode{}, spaceLeft: -1, tearAfter: -1}
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

func (f *faultFS) step(op, name string) {
	f.mu.Lock()
	hook := f.before
	f.mu.Unlock()
	if hook != nil {
		hook(op, name)
	}
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		f.step("open", name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ino, ok := f.files[name]
	if !ok {
		if flag&os.O_CREATE == 0 {
			return nil, pathErr("open", name, fs.ErrNotExist)
		}
		ino = &inode{}
		f.files[name] = ino
	} else if flag&os.O_EXCL != 0 {
		return nil, pathErr("open", name, fs.ErrExist)
	}
	if flag&os.O_TRUNC != 0 {
		ino.mu.Lock()
		ino.data = ino.data[:0]
		ino.dirtyFrom = 0
		ino.mu.Unlock()
	}
	f.openFiles.Add(1)
	return &faultFile{fs: f, ino: ino, name: name, writable: flag&(os.O_RDWR|os.O_WRONLY) != 0}, nil
}

func (f *faultFS) ReadDir(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for p := range f.files {
		if filepath.Dir(p) == filepath.Clean(dir) {
			names = append(names, filepath.Base(p))
		}
	}
	sort.Strings(names)
	return names, nil
}

func (f *faultFS) Stat(name string) (int64, error) {
	f.mu.Lock()
	ino, ok := f.files[name]
	f.mu.Unlock()
	if !ok {
		return 0, pathErr("stat", name, fs.ErrNotExist)
	}
	ino.mu.Lock()
	defer ino.mu.Unlock()
	return int64(len(ino.data)), nil
}

func (f *faultFS) Remove(name string) error {
	f.step("remove", name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[name]; !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	delete(f.files, name)
	return nil
}

func (f *faultFS) Rename(oldname, newname string) error {
	f.step("rename", newname)
	f.mu.Lock()
	defer f.mu.Unlock()
	ino, ok := f.files[oldname]
	if !ok {
		return pathErr("rename", oldname, fs.ErrNotExist)
	}
	delete(f.files, oldname)
	f.files[newname] = ino
	return nil
}

func (f *faultFS) MkdirAll(string, os.FileMode) error { return nil }

func (f *faultFS) SyncDir(dir string) error {
	f.step("syncdir", dir)
	f.mu.Lock()
	defer f.mu.Unlock()
	dir = filepath.Clean(dir)
	for p := range f.durable {
		if filepath.Dir(p) == dir {
			delete(f.durable, p)
		}
	}
	for p, ino := range f.files {
		if filepath.Dir(p) == dir {
			f.durable[p] = ino
		}
	}
	return nil
}

// crash returns the file system as a machine would find it after losing
// power now: directory entries as last SyncDir'd, file contents as last
// Synced. The receiver is left as it is (its open files stay usable).
func (f *faultFS) crash() *faultFS {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := newFaultFS()
	copied := map[*inode]*inode{}
	for p, ino := range f.durable {
		n, ok := copied[ino]
		if !ok {
			ino.mu.Lock()
			n = &inode{data: append([]byte(nil), ino.synced...), synced: append([]byte(nil), ino.synced...)}
			n.dirtyFrom = len(n.data)
			ino.mu.Unlock()
			copied[ino] = n
		}
		c.files[p] = n
		c.durable[p] = n
	}
	return c
}

// clone copies the current state, everything durable (a clean shutdown).
func (f *faultFS) clone() *faultFS {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := newFaultFS()
	for p, ino := range f.files {
		ino.mu.Lock()
		n := &inode{data: append([]byte(nil), ino.data...), synced: append([]byte(nil), ino.data...)}
		n.dirtyFrom = len(n.data)
		ino.mu.Unlock()
		c.files[p] = n
		c.durable[p] = n
	}
	return c
}

// bytes returns a copy of a file's contents.
func (f *faultFS) bytes(name string) []byte {
	f.mu.Lock()
	ino := f.files[name]
	f.mu.Unlock()
	ino.mu.Lock()
	defer ino.mu.Unlock()
	return append([]byte(nil), ino.data...)
}

// setBytes replaces a file's contents, durably (as a disk that went bad
// or a tool that wrote to the file would).
func (f *faultFS) setBytes(name string, b []byte) {
	f.mu.Lock()
	ino, ok := f.files[name]
	if !ok {
		ino = &inode{}
		f.files[name] = ino
		f.durable[name] = ino
	}
	f.mu.Unlock()
	ino.mu.Lock()
	defer ino.mu.Unlock()
	ino.data = append([]byte(nil), b...)
	ino.synced = append([]byte(nil), b...)
	ino.dirtyFrom = len(b)
}

func (f *faultFS) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (f *faultFS) setSpace(n int64) { f.mu.Lock(); f.spaceLeft = n; f.mu.Unlock() }
func (f *faultFS) tearNextWrite(n int64) {
	f.mu.Lock()
	f.tearAfter = n
	f.mu.Unlock()
}
func (f *faultFS) setSync(err error, delay time.Duration) {
	f.mu.Lock()
	f.syncErr, f.syncDelay = err, delay
	f.mu.Unlock()
}

func (ff *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if ff.closed.Load() {
		return 0, pathErr("read", ff.name, fs.ErrClosed)
	}
	ff.ino.mu.Lock()
	defer ff.ino.mu.Unlock()
	if off >= int64(len(ff.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, ff.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (ff *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if ff.closed.Load() {
		return 0, pathErr("write", ff.name, fs.ErrClosed)
	}
	if !ff.writable {
		return 0, pathErr("write", ff.name, fs.ErrPermission)
	}
	f := ff.fs
	f.step("write", ff.name)
	f.mu.Lock()
	n := int64(len(p))
	var err error
	if f.tearAfter >= 0 && f.tearAfter < n {
		n, err = f.tearAfter, pathErr("write", ff.name, syscall.EIO)
	}
	if f.tearAfter >= 0 {
		f.tearAfter = -1
	}
	if f.spaceLeft >= 0 && f.spaceLeft < n {
		n, err = f.spaceLeft, pathErr("write", ff.name, syscall.ENOSPC)
	}
	if f.spaceLeft >= 0 {
		f.spaceLeft -= n
	}
	f.mu.Unlock()
	ino := ff.ino
	ino.mu.Lock()
	defer ino.mu.Unlock()
	if end := off + n; end > int64(len(ino.data)) {
		ino.data = append(ino.data, make([]byte, end-int64(len(ino.data)))...)
	}
	copy(ino.data[off:], p[:n])
	ino.dirtyFrom = min(ino.dirtyFrom, int(off))
	return int(n), err
}

func (ff *faultFile) Sync() error {
	if ff.closed.Load() {
		return pathErr("sync", ff.name, fs.ErrClosed)
	}
	f := ff.fs
	f.step("sync", ff.name)
	f.mu.Lock()
	err, delay := f.syncErr, f.syncDelay
	f.mu.Unlock()
	f.syncs.Add(1)
	if delay > 0 {
		time.Sleep(delay)
	}
	if err != nil {
		return pathErr("sync", ff.name, err)
	}
	ino := ff.ino
	ino.mu.Lock()
	defer ino.mu.Unlock()
	keep := min(ino.dirtyFrom, len(ino.synced), len(ino.data))
	ino.synced = append(ino.synced[:keep], ino.data[keep:]...)
	ino.dirtyFrom = len(ino.data)
	return nil
}

func (ff *faultFile) Truncate(size int64) error {
	if ff.closed.Load() {
		return pathErr("truncate", ff.name, fs.ErrClosed)
	}
	ff.fs.step("truncate", ff.name)
	ino := ff.ino
	ino.mu.Lock()
	defer ino.mu.Unlock()
	if size < int64(len(ino.data)) {
		ino.data = ino.data[:size]
	} else {
		ino.data = append(ino.data, make([]byte, size-int64(len(ino.data)))...)
	}
	ino.dirtyFrom = min(ino.dirtyFrom, int(size))
	return nil
}

func (ff *faultFile) Size() (int64, error) {
	ff.ino.mu.Lock()
	defer ff.ino.mu.Unlock()
	return int64(len(ff.ino.data)), nil
}

func (ff *faultFile) Close() error {
	if ff.closed.Swap(true) {
		return pathErr("close", ff.name, fs.ErrClosed)
	}
	ff.fs.openFiles.Add(-1)
	return nil
}
