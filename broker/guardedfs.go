package broker

import (
	"os"
	"sync/atomic"

	"github.com/logd/logd/log"
)

// guardedFS is the logs' file system with every write admitted by the
// disk guard first (see diskGuard.admitWrite). Until the server serves,
// writes pass unguarded: recovery (cutting a torn tail, rebuilding an
// index) may use the room the reserve left, or the node could not start on
// a full disk.
type guardedFS struct {
	log.FS
	g       *diskGuard
	serving *atomic.Bool
}

func (fs guardedFS) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	f, err := fs.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return guardedFile{File: f, fs: fs}, nil
}

type guardedFile struct {
	log.File
	fs guardedFS
}

func (f guardedFile) WriteAt(p []byte, off int64) (int, error) {
	if !f.fs.serving.Load() {
		return f.File.WriteAt(p, off)
	}
	n := int64(len(p))
	if err := f.fs.g.admitWrite(n); err != nil {
		return 0, err
	}
	defer f.fs.g.doneWrite(n)
	return f.File.WriteAt(p, off)
}
