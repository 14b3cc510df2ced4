package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// doc is the file that holds the table, relative to the module's root, and
// section the heading of the part of it the table is in.
const (
	doc     = "docs/architecture.md"
	section = "## Who may import whom"
	harness = "harness" // the kind of a row whose packages only tests link
	// frontEnd is the kind of a row whose packages serve a protocol on
	// the core: they import the core (broker), and none of coreOnly
	// directly, in their own files or their tests.
	frontEnd = "front-end"
)

// coreOnly are the packages below the core: only the core and what it
// builds on import them (relative to the module; their sub-packages too).
var coreOnly = []string{"log", "partition", "replication"}

// A rule is one package's row of the table. Paths of the module are
// relative to the module ("log", "internal/batch"); never entries that
// are not of the module are import-path prefixes of other modules.
type rule struct {
	kind    string
	imports []string // exactly the module's packages it imports, sorted
	never   []string // what it must never link, directly or not
	line    int      // where the row is in doc
}

// A pkg is what `go list -json` says of one package of the module.
type pkg struct {
	ImportPath   string
	Imports      []string // its own files' imports (tests left out)
	TestImports  []string // its in-package tests' imports
	XTestImports []string // its external (_test package) tests' imports
	Deps         []string // everything it links, transitively
}

// TestImportTableMatchesTheTree is the rule the table states, checked on
// the tree as it is: a package importing what its row does not list, a row
// listing an import the package no longer has, a package without a row, a
// row of no package, a package linking what its row forbids, and a
// production package linking a test harness all fail it.
func TestImportTableMatchesTheTree(t *testing.T) {
	root, module := moduleRoot(t)
	md, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := parseTable(string(md))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	pkgs := listPackages(t, root, module)
	for _, e := range check(rules, pkgs, module) {
		t.Errorf("%s: %s", doc, e)
	}
}

func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module, root, ok := strings.Cut(strings.TrimSpace(string(out)), " ") // a path has no space; a directory may
	if !ok {
		t.Fatalf("go list -m answered %q", out)
	}
	return root, module
}

// listPackages runs `go list -json ./...` in the module's root and returns
// its packages by their path relative to the module.
func listPackages(t *testing.T, root, module string) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		rel, ok := relative(p.ImportPath, module)
		if !ok {
			t.Fatalf("go list ./... listed %s, outside module %s", p.ImportPath, module)
		}
		pkgs[rel] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... listed no package")
	}
	return pkgs
}

// relative returns path relative to module, and whether it is in it.
func relative(path, module string) (string, bool) {
	return strings.CutPrefix(path, module+"/")
}

var quoted = regexp.MustCompile("`([^`]+)`")

// parseTable reads the rows of the table under section in md. Its columns:
// the package or packages (in backquotes), their kind, the module's
// packages they import (in backquotes; none is "nothing"), what they must
// never link (in backquotes), a note.
func parseTable(md string) (map[string]*rule, error) {
	lines := strings.Split(md, "\n")
	start := slices.Index(lines, section)
	if start < 0 {
		return nil, fmt.Errorf("no line %q", section)
	}
	rules := map[string]*rule{}
	header := false
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			return nil, fmt.Errorf("line %d: %d columns, want 5 (package, kind, imports, never links, note)", i+1, len(cells))
		}
		if !header { // the header, then the separator
			header = true
			i++
			continue
		}
		names := backquoted(cells[0])
		if len(names) == 0 {
			return nil, fmt.Errorf("line %d: no package in backquotes", i+1)
		}
		imports := backquoted(cells[2])
		if len(imports) == 0 && strings.TrimSpace(cells[2]) != "nothing" {
			return nil, fmt.Errorf("line %d: imports are packages in backquotes, or \"nothing\"", i+1)
		}
		slices.Sort(imports)
		r := &rule{kind: strings.TrimSpace(cells[1]), imports: imports, never: backquoted(cells[3]), line: i + 1}
		for _, n := range names {
			if prev, ok := rules[n]; ok {
				return nil, fmt.Errorf("line %d: %s has a row already, line %d", i+1, n, prev.line)
			}
			rules[n] = r
		}
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("no table under %q", section)
	}
	return rules, nil
}

func backquoted(cell string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// check returns every way pkgs and rules disagree, sorted.
func check(rules map[string]*rule, pkgs map[string]pkg, module string) []string {
	var errs []string
	for name, p := range pkgs {
		r, ok := rules[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("package %s has no row: add one saying what it imports", name))
			continue
		}
		errs = append(errs, checkImports(name, r, p, module)...)
		errs = append(errs, checkLinks(name, r, p, rules, module)...)
		errs = append(errs, checkFrontEnd(name, r, p, module)...)
	}
	for name, r := range rules {
		if _, ok := pkgs[name]; !ok {
			errs = append(errs, fmt.Sprintf("line %d: %s is not a package of the module: remove its row", r.line, name))
		}
	}
	slices.Sort(errs)
	return errs
}

// checkImports compares the module's packages p imports with its row.
func checkImports(name string, r *rule, p pkg, module string) []string {
	var errs []string
	var got []string
	for _, imp := range p.Imports {
		if rel, ok := relative(imp, module); ok {
			got = append(got, rel)
		}
	}
	for _, imp := range got {
		if !slices.Contains(r.imports, imp) {
			errs = append(errs, fmt.Sprintf("line %d: %s imports %s, which its row does not allow", r.line, name, imp))
		}
	}
	for _, imp := range r.imports {
		if !slices.Contains(got, imp) {
			errs = append(errs, fmt.Sprintf("line %d: %s's row lists %s, which %s does not import: take it out of the row", r.line, name, imp, name))
		}
	}
	return errs
}

// checkFrontEnd checks that a front-end, in its own files and its tests,
// imports none of coreOnly: what it needs of them the core names.
func checkFrontEnd(name string, r *rule, p pkg, module string) []string {
	if r.kind != frontEnd {
		return nil
	}
	var errs []string
	for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
		for _, c := range coreOnly {
			if under(imp, module+"/"+c) {
				errs = append(errs, fmt.Sprintf("line %d: the front-end %s imports %s: a front-end imports the core (broker), which names what it needs of %s", r.line, name, imp, c))
			}
		}
	}
	slices.Sort(errs)
	return slices.Compact(errs)
}

// checkLinks checks what p links, directly or not, against its row's never
// column and, unless p is a harness, against the harnesses' rows.
func checkLinks(name string, r *rule, p pkg, rules map[string]*rule, module string) []string {
	var errs []string
	for _, dep := range p.Deps {
		for _, never := range r.never {
			if under(dep, absolute(never, module)) {
				errs = append(errs, fmt.Sprintf("line %d: %s links %s, which it must never link", r.line, name, dep))
			}
		}
		rel, ok := relative(dep, module)
		if dr, isRow := rules[rel]; ok && isRow && dr.kind == harness && r.kind != harness {
			errs = append(errs, fmt.Sprintf("line %d: %s links the test harness %s", r.line, name, rel))
		}
	}
	return errs
}

// absolute turns a never entry into an import-path prefix: the module's
// packages are named relative to it, other modules' by their full path.
func absolute(never, module string) string {
	first, _, _ := strings.Cut(never, "/")
	if strings.Contains(first, ".") {
		return never
	}
	return module + "/" + never
}

// under reports whether path is prefix or inside it.
func under(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
