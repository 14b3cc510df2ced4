package importrules

import (
	"strings"
	"testing"
)

const testModule = "example.com/m"

// testTable is a small table in the format of docs/architecture.md.
const testTable = "# x\n\n" + section + `

| package | kind | imports (of this module) | never links | note |
| --- | --- | --- | --- | --- |
| ` + "`log`" + ` | storage | ` + "`batch`" + ` | ` + "`github.com/hashicorp/raft`, `server`" + ` | |
| ` + "`batch`, `server`" + ` | leaf | nothing | | a note |
| ` + "`harness`" + ` | harness | ` + "`log`" + ` | | |
| ` + "`web`" + ` | front-end | ` + "`core`" + ` | | |
| ` + "`core`" + ` | core | ` + "`log`" + ` | | |

## Next

| ` + "`ignored`" + ` | leaf | nothing | | |
`

func TestParseTable(t *testing.T) {
	rules, err := parseTable(testTable)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 6 {
		t.Fatalf("parsed %d packages, want 6 (log, batch, server, harness, web, core): %v", len(rules), rules)
	}
	if r := rules["log"]; r.kind != "storage" || strings.Join(r.imports, ",") != "batch" || len(r.never) != 2 {
		t.Errorf("log's row: %+v", r)
	}
	if r := rules["server"]; len(r.imports) != 0 || r != rules["batch"] {
		t.Errorf("a row of two packages: %+v", r)
	}
	if _, ok := rules["ignored"]; ok {
		t.Error("a table of another section was read")
	}
}

func TestParseTableRefusesMalformedRows(t *testing.T) {
	for name, md := range map[string]string{
		"no section":      "# x\n| `a` | leaf | nothing | | |\n",
		"four columns":    section + "\n| h | k | i | n |\n| - | - | - | - |\n| `a` | leaf | nothing | |\n",
		"empty imports":   section + "\n| h | k | i | n | x |\n| - | - | - | - | - |\n| `a` | leaf | | | |\n",
		"two rows of one": section + "\n| h | k | i | n | x |\n| - | - | - | - | - |\n| `a` | leaf | nothing | | |\n| `a` | leaf | nothing | | |\n",
	} {
		if _, err := parseTable(md); err == nil {
			t.Errorf("%s: parsed without an error", name)
		}
	}
}

// tree is a module that keeps testTable.
func tree() map[string]pkg {
	m := testModule + "/"
	return map[string]pkg{
		"log":     {ImportPath: m + "log", Imports: []string{"fmt", m + "batch"}, Deps: []string{"fmt", m + "batch"}},
		"batch":   {ImportPath: m + "batch", Imports: []string{"fmt"}, Deps: []string{"fmt"}},
		"server":  {ImportPath: m + "server"},
		"harness": {ImportPath: m + "harness", Imports: []string{m + "log"}, Deps: []string{m + "batch", m + "log"}},
		"core":    {ImportPath: m + "core", Imports: []string{m + "log"}, Deps: []string{m + "batch", m + "log"}},
		"web": {ImportPath: m + "web", Imports: []string{m + "core"}, XTestImports: []string{m + "web", m + "core"},
			Deps: []string{m + "batch", m + "core", m + "log"}},
	}
}

// TestCheck breaks a tree that keeps the table in each way the table
// forbids and expects check to say so.
func TestCheck(t *testing.T) {
	rules, err := parseTable(testTable)
	if err != nil {
		t.Fatal(err)
	}
	if errs := check(rules, tree(), testModule); len(errs) != 0 {
		t.Fatalf("a tree that keeps the table: %v", errs)
	}
	m := testModule + "/"
	for _, c := range []struct {
		name  string
		edit  func(map[string]pkg)
		wants string
	}{
		{"import the row does not list", func(p map[string]pkg) {
			p["batch"] = pkg{ImportPath: m + "batch", Imports: []string{m + "server"}, Deps: []string{m + "server"}}
		}, "batch imports server, which its row does not allow"},
		{"row lists an import no longer made", func(p map[string]pkg) {
			p["log"] = pkg{ImportPath: m + "log"}
		}, "log's row lists batch, which log does not import"},
		{"package without a row", func(p map[string]pkg) {
			p["new"] = pkg{ImportPath: m + "new"}
		}, "package new has no row"},
		{"row of no package", func(p map[string]pkg) {
			delete(p, "server")
		}, "server is not a package of the module"},
		{"links another module it must not", func(p map[string]pkg) {
			l := p["log"]
			l.Deps = append(l.Deps, "github.com/hashicorp/raft/sub")
			p["log"] = l
		}, "log links github.com/hashicorp/raft/sub, which it must never link"},
		{"links a package of the module it must not", func(p map[string]pkg) {
			l := p["log"]
			l.Deps = append(l.Deps, m+"server")
			p["log"] = l
		}, "log links " + m + "server, which it must never link"},
		{"links a harness", func(p map[string]pkg) {
			b := p["batch"]
			b.Deps = append(b.Deps, m+"harness")
			p["batch"] = b
		}, "batch links the test harness harness"},
		{"a front-end imports what the core builds on", func(p map[string]pkg) {
			w := p["web"]
			w.Imports = append(w.Imports, m+"log")
			p["web"] = w
		}, "the front-end web imports " + m + "log"},
		{"a front-end's test imports what the core builds on", func(p map[string]pkg) {
			w := p["web"]
			w.XTestImports = append(w.XTestImports, m+"replication/meta")
			p["web"] = w
		}, "the front-end web imports " + m + "replication/meta"},
	} {
		pkgs := tree()
		c.edit(pkgs)
		errs := check(rules, pkgs, testModule)
		if !strings.Contains(strings.Join(errs, "\n"), c.wants) {
			t.Errorf("%s: got %q, want one containing %q", c.name, errs, c.wants)
		}
	}
}

func TestUnder(t *testing.T) {
	for _, c := range []struct {
		path, prefix string
		want         bool
	}{
		{"github.com/prometheus/client_golang/prometheus", "github.com/prometheus/", true},
		{"github.com/hashicorp/raft", "github.com/hashicorp/raft", true},
		{"github.com/hashicorp/raft-boltdb", "github.com/hashicorp/raft", false},
		{"example.com/m/logx", "example.com/m/log", false},
	} {
		if got := under(c.path, c.prefix); got != c.want {
			t.Errorf("under(%q, %q) = %v, want %v", c.path, c.prefix, got, c.want)
		}
	}
}
