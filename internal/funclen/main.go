// Command funclen lists the functions over a line limit in the Go files it
// is given, leaving out tests and generated code, and exits 1 when it
// finds one. `make lint` runs it over the repository with a limit of 80
// lines: a function that long does more than one thing.
//
//	go run ./internal/funclen -max 80 $(git ls-files '*.go')
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
)

func main() {
	limit := flag.Int("max", 80, "the most lines a function may have")
	flag.Parse()
	long, err := check(flag.Args(), *limit)
	for _, l := range long {
		fmt.Println(l)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(2)
	}
	if len(long) > 0 {
		fmt.Printf("%d function(s) over %d lines: split them\n", len(long), *limit)
		os.Exit(1)
	}
}

// check returns "file:line name N lines" for each function over limit in
// files, tests and generated files left out.
func check(files []string, limit int) ([]string, error) {
	fs := token.NewFileSet()
	var long []string
	for _, name := range files {
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return long, err
		}
		if generated(src) {
			continue
		}
		f, err := parser.ParseFile(fs, name, src, 0)
		if err != nil {
			return long, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fs.Position(fd.Pos()), fs.Position(fd.End())
			if n := end.Line - start.Line + 1; n > limit {
				long = append(long, fmt.Sprintf("%s:%d %s %d lines", name, start.Line, fd.Name.Name, n))
			}
		}
	}
	return long, nil
}

// generated reports whether src carries Go's "Code generated ... DO NOT
// EDIT." line.
func generated(src []byte) bool {
	for line := range bytes.Lines(src) {
		if bytes.HasPrefix(line, []byte("// Code generated ")) && bytes.Contains(line, []byte("DO NOT EDIT")) {
			return true
		}
		if bytes.HasPrefix(line, []byte("package ")) {
			return false
		}
	}
	return false
}
