// Command importrules checks the import rules of docs/architecture.md
// against the module's import graph, one rule per run, for the deps
// target of the Makefile:
//
//	go list -deps -json ./... > graph.json
//	importrules -graph graph.json -rule bridge-self-contained
//
// It exits 1 when the rule is broken, printing the rule and each offending
// import (with the chain of imports that reaches it, for a rule on every
// dependency), and 2 when it cannot check (an unknown rule, a graph it
// cannot read, a rule that binds no package). -list prints the rules'
// names. The rules bind the packages' code, not their tests: a test may
// import what it needs to run the real service.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// module is the import path of the module the rules' own patterns are in.
const module = "github.com/heraldhq/herald"

// Rule is one import rule: the packages matched by Of, less Except, must
// not import (or, with Deps, depend on at all) a package matched by Forbid
// and not by Allow.
type Rule struct {
	Name   string
	Text   string
	Of     []string
	Except []string
	Deps   bool
	Forbid []string
	Allow  []string
}

// Package is what the rules read of one package of `go list -json`: the
// imports of its code, tests aside.
type Package struct {
	ImportPath string
	Imports    []string
}

// Graph is the packages of `go list -deps -json` by import path.
type Graph map[string]*Package

// ReadGraph reads the JSON stream `go list -deps -json` writes.
func ReadGraph(r io.Reader) (Graph, error) {
	g := Graph{}
	dec := json.NewDecoder(r)
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the import graph: %w", err)
		}
		g[p.ImportPath] = &p
	}
	if len(g) == 0 {
		return nil, errors.New("reading the import graph: no package")
	}
	return g, nil
}

// Violation is one import that breaks a rule: Package imports Import, or
// (a rule on every dependency) reaches it through Chain.
type Violation struct {
	Package, Import string
	Chain           []string // Package, the packages between, Import
}

func (v Violation) String() string {
	s := short(v.Package) + " imports " + short(v.Import)
	if len(v.Chain) > 2 {
		hops := make([]string, len(v.Chain))
		for i, p := range v.Chain {
			hops[i] = short(p)
		}
		s = short(v.Package) + " depends on " + short(v.Import) + " (" + strings.Join(hops, " -> ") + ")"
	}
	return s
}

// Check returns the imports of g that break r, in the order of the
// packages' paths. A rule on every dependency walks the imports of each
// package it binds, and reports each forbidden package where the walk
// first reaches it, not what lies behind it, nor what another bound
// package reaches (which that package's walk reports). Check fails when r
// binds no package of g: a rule that checks nothing is a stale rule.
func (r *Rule) Check(g Graph) ([]Violation, error) {
	bound := func(path string) bool { return matchAny(r.Of, path) && !matchAny(r.Except, path) }
	forbidden := func(path string) bool { return matchAny(r.Forbid, path) && !matchAny(r.Allow, path) }
	var paths []string
	for path := range g {
		if bound(path) {
			paths = append(paths, path)
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("rule %s binds no package of the graph", r.Name)
	}
	slices.Sort(paths)
	var out []Violation
	for _, path := range paths {
		prev := map[string]string{path: ""}
		queue := []string{path}
		for len(queue) > 0 {
			at := queue[0]
			queue = queue[1:]
			p, ok := g[at]
			if !ok {
				continue
			}
			for _, imp := range p.Imports {
				if _, seen := prev[imp]; seen {
					continue
				}
				prev[imp] = at
				switch {
				case forbidden(imp):
					out = append(out, Violation{Package: path, Import: imp, Chain: chain(prev, imp)})
				case r.Deps && !bound(imp):
					queue = append(queue, imp)
				}
			}
		}
	}
	return out, nil
}

// chain is the walk's road to path: its first package, those between, path.
func chain(prev map[string]string, path string) []string {
	var c []string
	for p := path; p != ""; p = prev[p] {
		c = append(c, p)
	}
	slices.Reverse(c)
	return c
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}

// match reports whether path is pattern's package, or under it for a
// pattern ending in "/...".
func match(pattern, path string) bool {
	if first, _, _ := strings.Cut(pattern, "/"); pattern == "..." || !strings.Contains(first, ".") {
		pattern = module + "/" + pattern
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// short is path without the module's prefix.
func short(path string) string {
	return strings.TrimPrefix(path, module+"/")
}

func lookup(name string) *Rule {
	for i := range rules {
		if rules[i].Name == name {
			return &rules[i]
		}
	}
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("importrules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	graphFile := fs.String("graph", "", "the output of go list -deps -json ./... (required)")
	name := fs.String("rule", "", "the rule to check")
	list := fs.Bool("list", false, "print the rules' names and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *list {
		for _, r := range rules {
			fmt.Fprintln(stdout, r.Name)
		}
		return 0
	}
	r := lookup(*name)
	if r == nil || *graphFile == "" {
		fmt.Fprintf(stderr, "importrules: -graph and -rule are required; -rule is one of %s\n", strings.Join(names(), ", "))
		return 2
	}
	f, err := os.Open(*graphFile)
	if err != nil {
		fmt.Fprintf(stderr, "importrules: %v\n", err)
		return 2
	}
	defer f.Close()
	g, err := ReadGraph(f)
	if err != nil {
		fmt.Fprintf(stderr, "importrules: %v\n", err)
		return 2
	}
	bad, err := r.Check(g)
	if err != nil {
		fmt.Fprintf(stderr, "importrules: %v\n", err)
		return 2
	}
	if len(bad) == 0 {
		return 0
	}
	fmt.Fprintf(stderr, "import rule %s broken (docs/architecture.md): %s\n", r.Name, r.Text)
	for _, v := range bad {
		fmt.Fprintf(stderr, "  %s\n", v)
	}
	return 1
}

func names() []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
}
