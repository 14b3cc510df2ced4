package log

import (
	"os"
	"syscall"
)

// fdatasync flushes data and the metadata needed to read it back (the size),
// not timestamps: cheaper than fsync for appends.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
