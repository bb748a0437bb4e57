package httpapi_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

// moduleImport is a static import of one of the console's own modules.
var moduleImport = regexp.MustCompile(`(?m)^import [^;]*? from "(\.{1,2}/[^"]+\.js)";`)

// TestConsoleModulesServed: the console's page loads console.js, and
// every module it imports, followed down to the last, is served from the
// binary as JavaScript (a module served with another type does not run);
// the style sheet is CSS; /favicon.ico is an icon; names outside the
// assets are not found.
func TestConsoleModulesServed(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	page := h.Do("GET", "/console/", "", nil)
	if page.Status != http.StatusOK || !bytes.Contains(page.Body, []byte(`src="/console/assets/console.js"`)) {
		t.Fatalf("console page: %d %s", page.Status, page.Body)
	}
	seen := map[string]bool{}
	queue := []string{"console.js"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		r := h.Do("GET", "/console/assets/"+name, "", nil)
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Fatalf("%s: %d %q", name, r.Status, r.Header.Get("Content-Type"))
		}
		dir := name[:strings.LastIndex(name, "/")+1]
		for _, m := range moduleImport.FindAllStringSubmatch(string(r.Body), -1) {
			queue = append(queue, resolve(dir, m[1]))
		}
	}
	for _, want := range []string{"console.js", "api.js", "dom.js", "route.js", "pages/run.js", "pages/tail.js"} {
		if !seen[want] {
			t.Errorf("%s is not among the modules console.js loads (%v)", want, seen)
		}
	}
	if r := h.Do("GET", "/console/assets/console.css", "", nil); r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("console.css: %d %q", r.Status, r.Header.Get("Content-Type"))
	}
	if r := h.Do("GET", "/favicon.ico", "", nil); r.Status != http.StatusOK || r.Header.Get("Content-Type") != "image/x-icon" ||
		!bytes.HasPrefix(r.Body, []byte{0, 0, 1, 0}) {
		t.Errorf("favicon: %d %q % x", r.Status, r.Header.Get("Content-Type"), r.Body[:min(8, len(r.Body))])
	}
	for _, name := range []string{"pages/nope.js", "consoleui.go", "index.html", "pages/", "favicon.ico"} {
		if r := h.Do("GET", "/console/assets/"+name, "", nil); r.Status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", name, r.Status)
		}
	}
}

// resolve is the asset path of a relative import rel in directory dir.
func resolve(dir, rel string) string {
	for {
		switch {
		case strings.HasPrefix(rel, "./"):
			rel = rel[2:]
		case strings.HasPrefix(rel, "../"):
			rel = rel[3:]
			dir = dir[:strings.LastIndex(strings.TrimSuffix(dir, "/"), "/")+1]
		default:
			return dir + rel
		}
	}
}
