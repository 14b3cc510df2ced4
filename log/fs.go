package log

import (
	"io"
	"os"
	"path/filepath"
	"time"
)

// FS is the file system the log uses; tests inject faults through it. Names
// are full paths.
type FS interface {
	// OpenFile opens a file as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// ReadDir lists the names (not paths) in dir.
	ReadDir(dir string) ([]string, error)
	// Stat returns the size of a file.
	Stat(name string) (size int64, err error)
	Remove(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// SyncDir makes creations, renames and removals in dir durable.
	SyncDir(dir string) error
}

// File is an open file. The log writes at explicit positions, so WriteAt
// and ReadAt may run concurrently on different ranges.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Sync makes the file's data (and size) durable: fdatasync.
	Sync() error
	Truncate(size int64) error
	// Size is the current size of the file.
	Size() (int64, error)
	Close() error
}

// OSFS is the operating system's file system.
type OSFS struct{}

type osFile struct{ *os.File }

func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OSFS) ReadDir(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names, nil
}

func (OSFS) Stat(name string) (int64, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (OSFS) Remove(name string) error                    { return os.Remove(name) }
func (OSFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (OSFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f osFile) Sync() error { return fdatasync(f.File) }

func (f osFile) Size() (int64, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// timedSync syncs f and reports the duration to the hook.
func timedSync(f File, hook func(time.Duration)) error {
	start := time.Now()
	err := f.Sync()
	if hook != nil {
		hook(time.Since(start))
	}
	return err
}
