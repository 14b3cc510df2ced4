// Package logdbin gives tests that run logd as a process (test/e2e,
// test/edge, torture) one build of the binary per test process.
//
//	func TestMain(m *testing.M) { os.Exit(logdbin.Main(m)) }
//	...
//	bin := logdbin.Binary(t)
package logdbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
)

// Build builds cmd/logd into dir and returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "logd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/logd/logd/cmd/logd")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build cmd/logd: %w\n%s", err, out)
	}
	return bin, nil
}

// Binary returns the logd binary built for this test process, building it
// on first use; a failed build fails the test.
func Binary(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, e := os.MkdirTemp("", "logd-test-bin")
		if e != nil {
			err = e
			return
		}
		path, err = Build(context.Background(), dir)
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Main runs the tests and removes the binary they built.
func Main(m *testing.M) int {
	code := m.Run()
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
	return code
}
