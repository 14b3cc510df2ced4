package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cluster id file: none is "", a written id reads back, a damaged file
// is an error that says what to do, and no temporary file stays behind.
func TestClusterIDFile(t *testing.T) {
	dir := t.TempDir()
	if id, err := readClusterID(dir); err != nil || id != "" {
		t.Fatalf("no file: %q, %v", id, err)
	}
	id, err := newClusterID()
	if err != nil || len(id) != 22 {
		t.Fatalf("new id %q, %v", id, err)
	}
	if other, _ := newClusterID(); other == id {
		t.Fatal("two new ids are equal")
	}
	if err := writeClusterID(dir, id); err != nil {
		t.Fatal(err)
	}
	if got, err := readClusterID(dir); err != nil || got != id {
		t.Fatalf("read back %q, %v; want %q", got, err, id)
	}
	if _, err := os.Stat(filepath.Join(dir, ClusterIDFile+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	for _, bad := range []string{"", "\n", "two words\n", strings.Repeat("x", 300)} {
		if err := os.WriteFile(filepath.Join(dir, ClusterIDFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readClusterID(dir); err == nil || !strings.Contains(err.Error(), "--data-dir") {
			t.Fatalf("content %q: %v, want an error that says what to do", bad, err)
		}
	}
	if err := writeClusterID(dir, "has space"); err == nil {
		t.Fatal("an id with a space was written")
	}
}
