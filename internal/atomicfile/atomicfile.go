// Package atomicfile writes a side file so that a crash at any point
// leaves either the old file or the whole new one under its name, never a
// part: the content goes to NAME.tmp, which is synced, closed and renamed
// over NAME, and then the directory is synced so the rename itself is
// durable. A NAME.tmp left by a crash is the caller's to ignore or remove.
//
// The log's segments and indexes do the same through the log's own file
// system interface (log/fs.go), which its fault-injection tests replace.
package atomicfile

import (
	"os"
	"path/filepath"
)

// TempSuffix is the suffix of the file being written.
const TempSuffix = ".tmp"

// Write makes path hold what fill writes into the file it is given, with
// permissions perm, atomically and durably (see the package doc).
func Write(path string, perm os.FileMode, fill func(f *os.File) error) error {
	tmp := path + TempSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir syncs a directory, so the names created, renamed or removed in
// it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
