package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldhq/herald/service"
)

var update = flag.Bool("update", false, "rewrite the README's configuration table from settings")

// The README's configuration table sits between these lines.
const (
	tableStart = "<!-- settings: written from cmd/herald/settings.go by `go test ./cmd/herald -run TestSettings -update` -->"
	tableEnd   = "<!-- end of settings -->"
)

// readSettingNames returns every HERALD_* name the service's code holds
// as a string literal: the variables it reads. Tests, the test support
// under internal/, herald bench (cmd/herald/internal/bench, a benchmark's
// settings, not the service's), the Bridge SDK and the examples (a
// tenant's programs, not the service) are left out.
func readSettingNames(t *testing.T) map[string][]string {
	t.Helper()
	name := regexp.MustCompile(`^HERALD_[A-Z0-9_]+$`)
	found := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		if d.IsDir() {
			switch rel {
			case "internal", "cmd/herald/internal", "examples", "bridge", ".git", "sdk", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && name.MatchString(v) {
					found[v] = append(found[v], rel)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestSettings holds the one table of settings to the code, the README
// and herald serve: every HERALD_* variable the code reads is in it (and
// no other), the README's table is the one it writes, serve's flags are
// the table's, and serve --help names every variable and flag.
func TestSettings(t *testing.T) {
	t.Parallel()
	read := readSettingNames(t)
	if len(read) < 20 {
		t.Fatalf("found only %d HERALD_* names in the code: the scan is broken", len(read))
	}
	listed := map[string]bool{}
	for _, s := range settings {
		listed[s.env] = true
		if read[s.env] == nil {
			t.Errorf("settings lists %s, which no code reads: drop it", s.env)
		}
	}
	// A client command's own variables are not herald serve's settings:
	// the command's --help and its page (docs/check.md) name them.
	clientOnly := map[string]bool{"HERALD_API_KEY": true} // herald check --key
	var missing []string
	for env, where := range read {
		if !listed[env] && !clientOnly[env] {
			missing = append(missing, env+" (read in "+strings.Join(where, ", ")+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("the code reads %s, which cmd/herald/settings.go does not list", m)
	}

	var table bytes.Buffer
	settingsTable(&table)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start, end := bytes.Index(readme, []byte(tableStart)), bytes.Index(readme, []byte(tableEnd))
	if start < 0 || end < start {
		t.Fatalf("README.md lacks the lines %q and %q around its configuration table", tableStart, tableEnd)
	}
	want := append([]byte(tableStart+"\n\n"), table.Bytes()...)
	want = append(want, '\n')
	if got := readme[start:end]; !bytes.Equal(got, want) {
		if !*update {
			t.Fatalf("README.md's configuration table differs from cmd/herald/settings.go; run go test ./cmd/herald -run TestSettings -update\ngot:\n%s\nwant:\n%s", got, want)
		}
		out := append(append(append([]byte{}, readme[:start]...), want...), readme[end:]...)
		if err := os.WriteFile("../../README.md", out, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	flags := map[string]bool{}
	var f service.Flags
	var mem string
	fs := newFlagSet("serve")
	serveFlags(fs, &f, &mem)
	fs.VisitAll(func(fl *flag.Flag) { flags["--"+fl.Name] = true })
	for _, s := range settings {
		if s.flag != "" && !flags[s.flag] {
			t.Errorf("settings gives %s the flag %s, which serve does not declare", s.env, s.flag)
		}
		delete(flags, s.flag)
	}
	for fl := range flags {
		t.Errorf("serve declares %s, which settings does not list", fl)
	}

	var help bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, &help, &bytes.Buffer{}); err != nil {
		t.Fatalf("serve --help: %v", err)
	}
	for _, s := range settings {
		if !strings.Contains(help.String(), s.env) || !strings.Contains(help.String(), s.flag) {
			t.Errorf("serve --help lacks %s %s", s.env, s.flag)
		}
	}
}

// settingsTable writes settings as the README's Markdown table.
func settingsTable(w io.Writer) {
	fmt.Fprintln(w, "| env | flag | default | meaning |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range settings {
		flag := ""
		if s.flag != "" {
			flag = "`" + s.flag + "`"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", s.env, flag, s.def, s.meaning)
	}
}
