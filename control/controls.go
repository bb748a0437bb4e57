package control

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/stepcontrols"
)

// Bounds of a workflow's control schemas.
const (
	// MaxControlSchemasBytes bounds the control schemas of one workflow,
	// all steps together, as a Bridge reports them.
	MaxControlSchemasBytes = 64 << 10
	// maxControlStepIDBytes bounds a step id named by a control schema.
	maxControlStepIDBytes = 200
)

// checkControlSchemas returns the problems of a discovered workflow's
// control schemas, named under field: over MaxControlSchemasBytes
// together, a step id empty or too long, or a schema the service cannot
// enforce (checkPayloadSchema's rules), not of "type":"object", with a
// property without a default, or defaults it refuses.
func checkControlSchemas(field string, schemas map[string]json.RawMessage) apierr.Problems {
	var p apierr.Problems
	total := 0
	steps := make([]string, 0, len(schemas))
	for step, raw := range schemas {
		total += len(step) + len(raw)
		steps = append(steps, step)
	}
	if total > MaxControlSchemasBytes {
		p.Add(field+".controls", "is over %d bytes", MaxControlSchemasBytes)
		return p
	}
	sort.Strings(steps)
	for _, step := range steps {
		f := field + ".controls." + step
		if step == "" || len(step) > maxControlStepIDBytes || !utf8.ValidString(step) {
			p.Add(field+".controls", "names a step id that is empty, not UTF-8 or over %d bytes", maxControlStepIDBytes)
			continue
		}
		raw := schemas[step]
		if msg := checkPayloadSchema(raw); msg != "" {
			p.Add(f, "%s", msg)
			continue
		}
		if _, err := stepcontrols.Compile(raw); err != nil {
			p.Add(f, "%s", err.Error())
		}
	}
	return p
}

// stepSchema returns the control schema step declares in workflow at the
// tenant's last sync, compiled. Errors: 404 workflow_not_found, and a
// validation error naming stepId when the step declares no controls.
func stepSchemaOf(wfs []Workflow, workflow, step string) (*stepcontrols.Schema, error) {
	for _, w := range wfs {
		if w.WorkflowID != workflow {
			continue
		}
		raw, ok := w.Controls[step]
		if !ok {
			var p apierr.Problems
			p.Add("stepId", "workflow %q declares no controls for step %q", workflow, clip(step, maxControlStepIDBytes))
			return nil, p.Err()
		}
		cs, err := stepcontrols.Compile(raw)
		if err != nil {
			return nil, fmt.Errorf("the control schema of step %q of %q: %w", step, workflow, err)
		}
		return cs, nil
	}
	return nil, apierr.Errorf(apierr.CodeWorkflowNotFound, "workflow %q is not among the tenant's synced workflows", workflow)
}
