package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Write replaces the file whole; a fill that fails leaves the old content
// and no temporary file.
func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write := func(s string) func(*os.File) error {
		return func(f *os.File) error { _, err := f.WriteString(s); return err }
	}
	if err := Write(path, 0o600, write("one")); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, 0o600, write("two")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := Write(path, 0o600, func(f *os.File) error { f.WriteString("thr"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed fill: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "two" {
		t.Fatalf("after a failed fill: %q %v, want the last whole write", b, err)
	}
	if _, err := os.Stat(path + TempSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary file stays: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
}
