//go:build !linux

package log

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
