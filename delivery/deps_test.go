package delivery_test

import (
	"os/exec"
	"strings"
	"testing"
)

// delivery sits below the command layer: it reads projections and opens
// secrets itself, and never imports control, the engine or the API.
func TestDeliveryImportsNoUpperLayer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		for _, upper := range []string{"control", "engine", "httpapi", "service"} {
			if dep == "github.com/heraldhq/herald/"+upper {
				t.Errorf("delivery depends on %s", dep)
			}
		}
	}
}

// The core (plan, claim, send, record, failover, catalog) knows providers
// only through delivery/provider: the registry lives in delivery/providers,
// and the core imports at most 12 packages of ours.
func TestCoreImportsNoProvider(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const ours = "github.com/heraldhq/herald/"
	n := 0
	for imp := range strings.FieldsSeq(string(out)) {
		rest, ok := strings.CutPrefix(imp, ours)
		if !ok {
			continue
		}
		n++
		if sub, ok := strings.CutPrefix(rest, "delivery/"); ok && sub != "provider" && sub != "inbound" {
			t.Errorf("delivery imports %s", imp)
		}
	}
	if n > 12 {
		t.Errorf("delivery imports %d packages of ours, want at most 12", n)
	}
}
