package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pages returns README.md and docs/*.md by their path from the
// repository's root, with their text.
func pages(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range append([]string{"../README.md"}, names...) {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(n, "../")
		if !strings.Contains(n, "/") {
			rel = "docs/" + n
		}
		out[rel] = string(b)
	}
	if len(out) < 8 {
		t.Fatalf("only %d pages found", len(out))
	}
	return out
}

// exists reports whether path, from the repository's root, exists.
func exists(path string) bool {
	_, err := os.Stat(filepath.Join("..", filepath.FromSlash(path)))
	return err == nil
}

var (
	// mdLink is a Markdown link's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// pathLike is a word with a slash, not part of a URL or an absolute
	// path: a candidate file path.
	pathLike = regexp.MustCompile(`(?:^|[^\w/:.\-{$])([A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)+/?[*…]?)`)
	// mdName is a bare page name such as BENCHMARKS.md or channels.md.
	mdName = regexp.MustCompile(`(?:^|[^\w/.\-])([A-Za-z0-9_\-]+\.md)\b`)
	// goSymbol ends a package path with a Go identifier (provider.Provider).
	goSymbol = regexp.MustCompile(`\.[A-Za-z_][A-Za-z0-9_]*$`)
)

// TestDocsStandAlone: every page a user reads (README.md, docs/*.md)
// resolves each relative link and each path into the repository it
// names, and cites no document the repository does not ship.
func TestDocsStandAlone(t *testing.T) {
	top := map[string]bool{}
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			top[e.Name()] = true
		}
	}
	checked := 0
	for page, text := range pages(t) {
		dir := filepath.ToSlash(filepath.Dir(page))
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			checked++
			if !exists(filepath.ToSlash(filepath.Join(dir, target))) {
				t.Errorf("%s links %s, which is not in the repository", page, m[1])
			}
		}
		for _, m := range pathLike.FindAllStringSubmatch(text, -1) {
			p := strings.TrimSuffix(strings.TrimSuffix(m[1], "/..."), "/")
			p = strings.TrimSuffix(p, ".")
			first, _, _ := strings.Cut(p, "/")
			if !top[first] || strings.ContainsAny(p, "…*") {
				continue // not a path into the repository (herald-data/…, net/http)
			}
			checked++
			if exists(p) {
				continue
			}
			if pkg := goSymbol.ReplaceAllString(p, ""); pkg != p && exists(pkg) {
				continue // a package's symbol: delivery/provider.Provider
			}
			t.Errorf("%s names %s, which is not in the repository", page, m[1])
		}
		for _, m := range mdName.FindAllStringSubmatch(text, -1) {
			checked++
			if !exists(m[1]) && !exists(dir+"/"+m[1]) {
				t.Errorf("%s names %s, which the repository does not ship", page, m[1])
			}
		}
		for _, outside := range []string{"../shared", "CONTRACT", "ARCHITECTURE.md", "service-spec"} {
			if strings.Contains(text, outside) {
				t.Errorf("%s cites %s, which is not the project's own page", page, outside)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d paths checked: the scan is broken", checked)
	}
}

// shellVar is a shell variable's use; shellSet its assignment.
var (
	shellVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
	shellSet = regexp.MustCompile(`(?m)(?:^|export\s+|\s)([A-Za-z_][A-Za-z0-9_]*)=`)
)

// TestDocsShellVariables: every shell block of the pages uses one set of
// variables: $B (the server's base URL) and $KEY (a tenant's API key),
// or variables the block itself sets, so that commands pasted from one
// page after another never send an empty value.
func TestDocsShellVariables(t *testing.T) {
	shared := map[string]bool{"B": true, "KEY": true}
	blocks := 0
	for page, text := range pages(t) {
		parts := strings.Split(text, "```")
		for i := 1; i < len(parts); i += 2 {
			block := parts[i]
			if !strings.HasPrefix(block, "sh\n") && !strings.HasPrefix(block, "bash\n") {
				continue
			}
			blocks++
			set := map[string]bool{}
			for _, m := range shellSet.FindAllStringSubmatch(block, -1) {
				set[m[1]] = true
			}
			for _, line := range strings.Split(block, "\n") {
				code, _, _ := strings.Cut(line, " #")
				if strings.HasPrefix(strings.TrimSpace(code), "#") {
					continue
				}
				for _, m := range shellVar.FindAllStringSubmatch(code, -1) {
					if !shared[m[1]] && !set[m[1]] {
						t.Errorf("%s: a shell block uses $%s, which it does not set; the pages share $B and $KEY only:\n%s", page, m[1], line)
					}
				}
			}
		}
	}
	if blocks < 10 {
		t.Fatalf("only %d shell blocks found", blocks)
	}
}

var (
	// exampleWorkflow is a workflow an example Bridge defines: Go's
	// bridge.MustWorkflow("id", …), TypeScript's workflow<…>("id", …).
	exampleWorkflow = regexp.MustCompile(`(?:MustWorkflow|workflow(?:<[^>(]*>)?)\("(\w+)"`)
	// pageWorkflow is a workflow a page defines, triggers or sets
	// preferences for: the id is its one non-empty group.
	pageWorkflow = regexp.MustCompile(`MustWorkflow\("(\w+)"|\bworkflow\("(\w+)"|"workflowId":\s*"(\w+)",\s*"to"|"workflows":\s*\{\s*"(\w+)"`)
)

// TestDocsWorkflowsExist: every workflow a page defines, triggers or sets
// preferences for is one the example Bridges serve (examples/bridge,
// examples/typescript), so that a reader who runs them can run the page.
func TestDocsWorkflowsExist(t *testing.T) {
	known := map[string]bool{}
	for _, src := range []string{"../examples/bridge/workflows.go", "../examples/typescript/src/main.ts"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range exampleWorkflow.FindAllStringSubmatch(string(b), -1) {
			known[m[1]] = true
		}
	}
	if !known["welcome"] || !known["invoice_paid"] || !known["approval"] {
		t.Fatalf("the example workflows were not found: %v", known)
	}
	checked := 0
	for page, text := range pages(t) {
		for _, m := range pageWorkflow.FindAllStringSubmatch(text, -1) {
			id := strings.Join(m[1:], "")
			checked++
			if !known[id] {
				t.Errorf("%s uses the workflow %q, which no example Bridge serves", page, id)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d workflow uses found in the pages", checked)
	}
}
