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
