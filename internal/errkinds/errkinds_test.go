package errkinds

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps its failures.
type recorder struct {
	testing.TB
	msgs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The walk finds exported Err variables and ...Error types, in var blocks
// and alone, in sub-packages too, and leaves out tests, unexported names,
// functions and skipped directories.
func TestExported(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "groups", "a.go"), `package groups
import "errors"
var (
	ErrOne = errors.New("one")
	errHidden = errors.New("hidden")
	Errorish = 1
)
var ErrTwo, ErrThree = errors.New("2"), errors.New("3")
type FancyError struct{}
func (*FancyError) Error() string { return "" }
func ErrFunc() error { return nil }
`)
	writeFile(t, filepath.Join(root, "groups", "a_test.go"), "package groups\nimport \"errors\"\nvar ErrTest = errors.New(\"t\")\n")
	writeFile(t, filepath.Join(root, "replication", "meta", "m.go"), "package meta\nimport \"errors\"\nvar ErrMeta = errors.New(\"m\")\n")
	writeFile(t, filepath.Join(root, "replication", "faultnet", "f.go"), "package faultnet\nimport \"errors\"\nvar ErrFault = errors.New(\"f\")\n")
	for _, r := range Roots {
		if err := os.MkdirAll(filepath.Join(root, r), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Exported(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"groups.ErrOne", "groups.ErrThree", "groups.ErrTwo", "groups.FancyError", "replication/meta.ErrMeta"}
	if !slices.Equal(got, want) {
		t.Fatalf("found %q, want %q", got, want)
	}
}

// Check names an exported error the catalogue does not hold, and a held
// one a front-end answers with its unknown code.
func TestCheckFailsOnANewError(t *testing.T) {
	root := t.TempDir()
	for _, r := range Roots {
		if err := os.MkdirAll(filepath.Join(root, r), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "offsets", "n.go"), "package offsets\nimport \"errors\"\nvar ErrBrandNew = errors.New(\"n\")\n")
	rec := &recorder{TB: t}
	Check(rec, root, func(err error) (string, bool) {
		return "UNKNOWN", strings.Contains(err.Error(), "no leader")
	})
	var newErr, unknown bool
	for _, m := range rec.msgs {
		newErr = newErr || strings.Contains(m, "new exported error ErrBrandNew in package offsets")
		unknown = unknown || strings.Contains(m, ".ErrNoLeader (")
	}
	if !newErr || !unknown {
		t.Fatalf("Check said %q; want the new error and ErrNoLeader named", rec.msgs)
	}
}
