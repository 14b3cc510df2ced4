package partition

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/logd/logd/log"
)

// failingOpenFS fails opening files under partition directories named
// fail, as a create of many partitions does when descriptors run out.
type failingOpenFS struct {
	log.OSFS
	fail string
}

func (f failingOpenFS) OpenFile(name string, flag int, perm os.FileMode) (log.File, error) {
	if strings.Contains(name, string(filepath.Separator)+f.fail+string(filepath.Separator)) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// TestFailedCreateLeavesNoDirectory: a create that fails while opening
// its partitions removes every directory it made, the failing partition's
// too (issue 17 item 7: a failed 10,000-partition create left one empty).
func TestFailedCreateLeavesNoDirectory(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, err := Open(Options{DataDir: dir, DB: db, LogOptions: func(TopicConfig) log.Options {
		return log.Options{FS: failingOpenFS{fail: "t-3"}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	c := DefaultConfig("t")
	c.Partitions = 5
	if _, err := tp.Create(c); err == nil {
		t.Fatal("create succeeded with partition 3 failing to open")
	}
	left, _ := os.ReadDir(filepath.Join(dir, "partitions"))
	for _, e := range left {
		t.Errorf("left behind: %s", e.Name())
	}
}
