package main

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// legal is a small tree that keeps every rule: the module's packages the
// rules name, with imports like the real ones. Paths without a dot in
// their first element are the module's.
var legal = map[string][]string{
	"bridge/wire":                {},
	"bridge/internal/replayhook": {"bridge/wire"},
	"bridge":                     {"bridge/wire", "bridge/internal/replayhook", "net/http"},
	"bridge/bridgetest":          {"bridge", "bridge/wire", "bridge/internal/replayhook"},
	"events":                     {},
	"runstate":                   {"events", "encoding/json"},
	"github.com/nats-io/nats.go": {"github.com/nats-io/nuid"},
	"github.com/nats-io/nuid":    {},
	"eventlog":                   {"events", "github.com/nats-io/nats.go"},
	"projections":                {"eventlog", "events", "runstate"},
	"delivery/provider":          {"net/http"},
	"delivery/smtp":              {"delivery/provider"},
	"delivery/providers":         {"delivery/provider", "delivery/smtp"},
	"delivery":                   {"eventlog", "projections", "bridge/wire", "delivery/provider"},
	"engine":                     {"eventlog", "projections", "runstate", "delivery", "bridge/wire"},
	"control":                    {"eventlog", "projections", "runstate", "delivery"},
	"webhooks":                   {"eventlog", "projections"},
	"httpapi":                    {"control", "projections", "delivery", "eventlog"},
	"service":                    {"httpapi", "control", "engine", "webhooks", "delivery/providers"},
	"cmd/herald":                 {"service", "eventlog"},
	"internal/testherald":        {"service", "bridge"},
	"internal/testchild":         {"service"},
	"net/http":                   {},
	"encoding/json":              {},
}

// graph is legal with the imports of extra added, as go list would give it.
func graph(extra map[string][]string) Graph {
	full := func(p string) string {
		first, _, _ := strings.Cut(p, "/")
		if strings.Contains(first, ".") || first == "net" || first == "encoding" {
			return p
		}
		return module + "/" + p
	}
	paths := map[string]bool{}
	for p := range legal {
		paths[p] = true
	}
	for p := range extra {
		paths[p] = true
	}
	g := Graph{}
	for p := range paths {
		pkg := &Package{ImportPath: full(p)}
		for _, imp := range append(slices.Clone(legal[p]), extra[p]...) {
			pkg.Imports = append(pkg.Imports, full(imp))
		}
		slices.Sort(pkg.Imports)
		g[pkg.ImportPath] = pkg
	}
	return g
}

// broken lists, for each way of breaking a rule, the rules that must fail
// and the violation each reports: together they break every rule.
var broken = []struct {
	name  string
	add   map[string][]string
	fails map[string]string // rule: one violation it reports
}{
	{"the SDK imports the server's events", map[string][]string{"bridge/wire": {"events"}},
		map[string]string{"bridge-self-contained": "bridge/wire imports events"}},
	{"the SDK reaches the server through a library", map[string][]string{"bridge": {"github.com/x/lib"}, "github.com/x/lib": {"eventlog"}},
		map[string]string{
			"bridge-self-contained": "bridge depends on eventlog (bridge -> github.com/x/lib -> eventlog)",
			"bridge-no-nats":        "bridge depends on github.com/nats-io/nats.go (bridge -> github.com/x/lib -> eventlog -> github.com/nats-io/nats.go)",
		}},
	{"the SDK imports NATS", map[string][]string{"bridge/bridgetest": {"github.com/nats-io/nuid"}},
		map[string]string{"bridge-no-nats": "bridge/bridgetest imports github.com/nats-io/nuid"}},
	{"the run fold imports NATS", map[string][]string{"runstate": {"github.com/nats-io/nats.go"}},
		map[string]string{"runstate-no-nats": "runstate imports github.com/nats-io/nats.go"}},
	{"a command imports the edge", map[string][]string{"cmd/herald": {"httpapi"}},
		map[string]string{"service-imports-httpapi": "cmd/herald imports httpapi"}},
	{"a package imports the process", map[string][]string{"webhooks": {"service"}},
		map[string]string{"cmd-imports-service": "webhooks imports service"}},
	{"the edge imports the engine", map[string][]string{"httpapi": {"engine"}},
		map[string]string{"httpapi-not-engine": "httpapi imports engine"}},
	{"the edge imports the run fold", map[string][]string{"httpapi": {"runstate"}},
		map[string]string{"httpapi-not-engine": "httpapi imports runstate"}},
	{"a package imports control for its errors", map[string][]string{"webhooks": {"control"}},
		map[string]string{"edge-imports-control": "webhooks imports control"}},
	{"control reaches the engine", map[string][]string{"control": {"webhooks"}, "webhooks": {"engine"}},
		map[string]string{"control-not-engine": "control depends on engine (control -> webhooks -> engine)"}},
	{"the engine imports control", map[string][]string{"engine": {"control"}},
		map[string]string{"engine-not-control": "engine imports control", "edge-imports-control": "engine imports control"}},
	{"a provider imports the engine", map[string][]string{"delivery/smtp": {"engine"}},
		map[string]string{"delivery-not-engine": "delivery/smtp imports engine"}},
	{"the core imports a provider", map[string][]string{"delivery": {"delivery/smtp"}},
		map[string]string{"delivery-core-no-providers": "delivery imports delivery/smtp"}},
	{"delivery imports control", map[string][]string{"delivery": {"control"}},
		map[string]string{
			"delivery-not-engine":  "delivery imports control",
			"edge-imports-control": "delivery imports control",
			"engine-not-control":   "engine depends on control (engine -> delivery -> control)",
		}},
}

// failing checks every rule against g: the rules that fail, each with its
// violations.
func failing(t *testing.T, g Graph) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for i := range rules {
		bad, err := rules[i].Check(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range bad {
			out[rules[i].Name] = append(out[rules[i].Name], v.String())
		}
	}
	return out
}

func TestLegalTreeKeepsEveryRule(t *testing.T) {
	if bad := failing(t, graph(nil)); len(bad) > 0 {
		t.Fatalf("the legal tree breaks %v", bad)
	}
}

func TestEachRuleFailsWhenBroken(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range broken {
		t.Run(c.name, func(t *testing.T) {
			got := failing(t, graph(c.add))
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(c.fails))) {
				t.Fatalf("failing rules %v, want those of %v", got, c.fails)
			}
			for rule, want := range c.fails {
				if !slices.Contains(got[rule], want) {
					t.Errorf("rule %s reports %q, want %q among them", rule, got[rule], want)
				}
				seen[rule] = true
			}
		})
	}
	for _, r := range rules {
		if !seen[r.Name] {
			t.Errorf("no case breaks rule %s", r.Name)
		}
	}
}

// A rule whose packages are gone (renamed, or a typo) fails to check
// rather than passing on nothing.
func TestRuleBindingNoPackageFails(t *testing.T) {
	g := graph(nil)
	delete(g, module+"/runstate")
	r := lookup("runstate-no-nats")
	if _, err := r.Check(g); err == nil {
		t.Fatal("a rule binding no package checked")
	}
}

// The command's answer: status 1 and the rule, its text and the offending
// import on a broken graph; 0 on a legal one; 2 on an unknown rule.
func TestRunReportsTheRuleAndTheImport(t *testing.T) {
	write := func(g Graph) string {
		var b bytes.Buffer
		for _, p := range g {
			b.WriteString(`{"ImportPath":"` + p.ImportPath + `","Imports":["` + strings.Join(p.Imports, `","`) + `"]}` + "\n")
		}
		f := filepath.Join(t.TempDir(), "graph.json")
		if err := os.WriteFile(f, bytes.ReplaceAll(b.Bytes(), []byte(`[""]`), []byte(`[]`)), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	var stdout, stderr bytes.Buffer
	bad := write(graph(map[string][]string{"httpapi": {"engine"}}))
	if code := run([]string{"-graph", bad, "-rule", "httpapi-not-engine"}, &stdout, &stderr); code != 1 {
		t.Fatalf("status %d on a broken rule: %s", code, &stderr)
	}
	for _, want := range []string{"import rule httpapi-not-engine broken", lookup("httpapi-not-engine").Text, "httpapi imports engine"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the report %q does not say %q", &stderr, want)
		}
	}
	stderr.Reset()
	if code := run([]string{"-graph", write(graph(nil)), "-rule", "httpapi-not-engine"}, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
		t.Errorf("status %d on a kept rule: %s", code, &stderr)
	}
	if code := run([]string{"-graph", bad, "-rule", "no-such-rule"}, &stdout, &stderr); code != 2 {
		t.Errorf("status %d on an unknown rule", code)
	}
}

// The page states every rule of the table, word for word, and the table
// holds every rule the page states: each bullet of the page's rule list.
func TestPageStatesEveryRule(t *testing.T) {
	page, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(page), "\nImport rules ")
	if !ok {
		t.Fatal(`docs/architecture.md has no paragraph starting "Import rules "`)
	}
	list, _, _ = strings.Cut(list, "\n## ")
	var bullets []string
	for _, line := range strings.Split(list, "\n") {
		switch {
		case strings.HasPrefix(line, "- "):
			bullets = append(bullets, strings.TrimPrefix(line, "- "))
		case strings.HasPrefix(line, "  ") && len(bullets) > 0:
			bullets[len(bullets)-1] += " " + strings.TrimSpace(line)
		}
	}
	texts := map[string]bool{}
	for _, r := range rules {
		texts[r.Text] = true
		if !slices.Contains(bullets, r.Text) {
			t.Errorf("the page does not state rule %s: %q", r.Name, r.Text)
		}
	}
	for _, b := range bullets {
		if !texts[b] {
			t.Errorf("the page states a rule no check holds: %q", b)
		}
	}
}

// The Makefile's deps target checks every rule, each on its own line.
func TestMakefileChecksEveryRule(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var checked []string
	for _, m := range regexp.MustCompile(`(?m)^\tcheck ([a-z-]+);`).FindAllStringSubmatch(string(mk), -1) {
		checked = append(checked, m[1])
	}
	if !slices.Equal(checked, names()) {
		t.Errorf("the Makefile checks %v, the rules are %v", checked, names())
	}
}

// The tree itself keeps every rule (what make lint checks).
func TestTreeKeepsEveryRule(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the module's packages")
	}
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	g, err := ReadGraph(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if bad := failing(t, g); len(bad) > 0 {
		t.Fatalf("the tree breaks %v", bad)
	}
}
