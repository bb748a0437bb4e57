package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
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
			p.Add("stepId", "workflow %q declares no controls for step %q", clip(workflow, MaxWorkflowIDChars), clip(step, maxControlStepIDBytes))
			return nil, p.Err()
		}
		cs, err := stepcontrols.Compile(raw)
		if err != nil {
			return nil, fmt.Errorf("the control schema of step %q of %q: %w", step, workflow, err)
		}
		return cs, nil
	}
	return nil, apierr.Errorf(apierr.CodeWorkflowNotFound, "workflow %q is not among the tenant's synced workflows", clip(workflow, MaxWorkflowIDChars))
}

// ControlsView is what GET /v1/workflows/{workflowId}/controls answers:
// the step schemas of the last sync, the current values by locale
// ("default" first) and step, and the last version.
type ControlsView struct {
	Schema  map[string]json.RawMessage
	Values  map[string]map[string]json.RawMessage
	Version int
	// Skipped names, by locale and step, the stored values a run skips
	// because the step's current schema refuses them (a later sync
	// changed it), or their step declares no controls any more.
	Skipped map[string]map[string][]string
}

// ControlVersion is one version of a workflow's controls.
type ControlVersion = projections.ControlVersion

// controlLocale is the canonical locale of a request: "default" for none.
func controlLocale(locale string) (string, error) {
	if locale == "" || locale == stepcontrols.DefaultLocale {
		return stepcontrols.DefaultLocale, nil
	}
	l, ok := stepcontrols.NormalizeLocale(locale)
	if !ok {
		var p apierr.Problems
		p.Add("locale", "must be a locale such as fr or fr-CA (a language of 2 or 3 letters, then subtags)")
		return "", p.Err()
	}
	return l, nil
}

// workflowControls returns the schema of step in workflow, as of the
// tenant's last sync, with the raw schema.
func (c *Control) workflowControls(ctx context.Context, tenant, workflow, step string) (*stepcontrols.Schema, json.RawMessage, error) {
	wfs, err := c.Workflows(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	cs, err := stepSchemaOf(wfs, workflow, step)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range wfs {
		if w.WorkflowID == workflow {
			return cs, w.Controls[step], nil
		}
	}
	return cs, nil, nil
}

// checkControlValues checks values (a PUT body) against the step's
// schema: a JSON object naming only properties of the schema, which the
// schema accepts over its defaults. A refusal is a *apierr.ValidationError,
// code invalid_controls, each field named controls.<name>.
func checkControlValues(ctx context.Context, cs *stepcontrols.Schema, raw json.RawMessage, body json.RawMessage) (map[string]json.RawMessage, error) {
	var values map[string]json.RawMessage
	if err := json.Unmarshal(body, &values); err != nil || values == nil {
		return nil, &apierr.ValidationError{Code: apierr.CodeInvalidControls,
			Problems: []apierr.FieldProblem{{Field: "controls", Problem: "must be a JSON object of the step's control values"}}}
	}
	var p apierr.Problems
	merged := cs.Defaults()
	for name, v := range values {
		if !cs.Has(name) {
			p.Add(fieldName(nil, []string{name}), "is not a control of the step")
			continue
		}
		merged[name] = v
	}
	if len(p) == 0 {
		sum := sha256.Sum256(raw)
		compiled := schemaOf(projections.WorkflowSchema{Digest: "controls:" + hex.EncodeToString(sum[:]), Schema: raw}, nil)
		if compiled != nil {
			m, _ := json.Marshal(merged)
			p = compiled.check(ctx, m)
		}
	}
	if len(p) > 0 {
		for i := range p {
			p[i].Field = "controls" + strings.TrimPrefix(p[i].Field, "payload")
		}
		sort.Slice(p, func(i, j int) bool { return p[i].Field < p[j].Field })
		return nil, &apierr.ValidationError{Code: apierr.CodeInvalidControls, Problems: p}
	}
	return values, nil
}

// controlsSubject is the subject of a workflow's control changes.
func controlsSubject(tenant, workflow string) string {
	return eventlog.Subject(tenant, eventlog.AggControls, workflow)
}

// changeControls appends the change of step's values in locale (nil:
// delete) as the workflow's next version, and returns it.
func (c *Control) changeControls(ctx context.Context, tenant, workflow, step, locale string, values json.RawMessage, revertedFrom int, actor string) (ControlVersion, error) {
	subject := controlsSubject(tenant, workflow)
	var out ControlVersion
	err := c.update(ctx, subject, func(seq uint64) error {
		last, err := c.store.ControlsVersion(tenant, workflow)
		if err != nil {
			return err
		}
		if values == nil {
			cur, err := c.store.ControlValues(tenant, workflow)
			if err != nil {
				return err
			}
			found := false
			for _, v := range cur {
				found = found || (v.StepID == step && v.Locale == locale)
			}
			if !found {
				out = ControlVersion{StepID: step, Locale: locale, Version: last}
				return nil // nothing to delete: nothing is written
			}
		}
		d := events.ControlsChangedData{WorkflowID: workflow, StepID: step, Locale: locale, Values: values,
			Version: last + 1, RevertedFrom: revertedFrom, Actor: actor}
		if values == nil {
			d.Values = json.RawMessage("null")
		}
		out = ControlVersion{StepID: step, Locale: locale, Values: values, Version: last + 1, RevertedFrom: revertedFrom, Actor: actor}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.ControlsChanged, Tenant: tenant, Data: d,
			Expect: true, ExpectSeq: seq})
		return err
	})
	return out, err
}

// SetControls sets the values of step's controls in locale ("" or
// "default": the tenant's default content), checked against the step's
// schema of the last sync, as the workflow's next version, changed by
// actor. Errors: 404 workflow_not_found; 422 validation_failed (a locale
// in a bad shape, a step without controls); 422 invalid_controls.
func (c *Control) SetControls(ctx context.Context, tenant, workflow, step, locale string, body json.RawMessage, actor string) (ControlVersion, error) {
	locale, err := controlLocale(locale)
	if err != nil {
		return ControlVersion{}, err
	}
	cs, raw, err := c.workflowControls(ctx, tenant, workflow, step)
	if err != nil {
		return ControlVersion{}, err
	}
	values, err := checkControlValues(ctx, cs, raw, body)
	if err != nil {
		return ControlVersion{}, err
	}
	compact, err := json.Marshal(values)
	if err != nil {
		return ControlVersion{}, err
	}
	return c.changeControls(ctx, tenant, workflow, step, locale, compact, 0, actor)
}

// DeleteControls deletes the values of step's controls in locale: the
// locale then falls back. Deleting none writes nothing. Errors as
// SetControls'.
func (c *Control) DeleteControls(ctx context.Context, tenant, workflow, step, locale, actor string) error {
	locale, err := controlLocale(locale)
	if err != nil {
		return err
	}
	if _, _, err := c.workflowControls(ctx, tenant, workflow, step); err != nil {
		return err
	}
	_, err = c.changeControls(ctx, tenant, workflow, step, locale, nil, 0, actor)
	return err
}

// RevertControls makes the values of version (a version of step's
// controls) current again, in its locale, as a new version. Errors as
// SetControls', and 422 validation_failed naming version when it is not a
// version of step, invalid_controls when the step's schema now refuses
// its values.
func (c *Control) RevertControls(ctx context.Context, tenant, workflow, step string, version int, actor string) (ControlVersion, error) {
	cs, raw, err := c.workflowControls(ctx, tenant, workflow, step)
	if err != nil {
		return ControlVersion{}, err
	}
	history, err := c.store.ControlHistory(tenant, workflow)
	if err != nil {
		return ControlVersion{}, err
	}
	for _, v := range history {
		if v.Version != version || v.StepID != step {
			continue
		}
		values := v.Values
		if values != nil {
			if _, err := checkControlValues(ctx, cs, raw, values); err != nil {
				return ControlVersion{}, err
			}
		}
		return c.changeControls(ctx, tenant, workflow, step, v.Locale, values, version, actor)
	}
	var p apierr.Problems
	p.Add("version", "is not a version of the controls of step %q", clip(step, maxControlStepIDBytes))
	return ControlVersion{}, p.Err()
}

// Controls returns a workflow's controls: the step schemas of the last
// sync, the current values by locale and step, and the last version.
// Errors: 404 workflow_not_found.
func (c *Control) Controls(ctx context.Context, tenant, workflow string) (ControlsView, error) {
	wfs, err := c.Workflows(ctx, tenant)
	if err != nil {
		return ControlsView{}, err
	}
	v := ControlsView{Schema: map[string]json.RawMessage{}, Values: map[string]map[string]json.RawMessage{}}
	found := false
	for _, w := range wfs {
		if w.WorkflowID == workflow {
			found = true
			for k, s := range w.Controls {
				v.Schema[k] = s
			}
		}
	}
	if !found {
		return ControlsView{}, apierr.Errorf(apierr.CodeWorkflowNotFound, "workflow %q is not among the tenant's synced workflows", clip(workflow, MaxWorkflowIDChars))
	}
	if _, err := c.settle(ctx, controlsSubject(tenant, workflow)); err != nil {
		return ControlsView{}, err
	}
	cur, err := c.store.ControlValues(tenant, workflow)
	if err != nil {
		return ControlsView{}, err
	}
	v.Skipped = map[string]map[string][]string{}
	for _, x := range cur {
		if v.Values[x.Locale] == nil {
			v.Values[x.Locale] = map[string]json.RawMessage{}
		}
		v.Values[x.Locale][x.StepID] = x.Values
		var values map[string]json.RawMessage
		_ = json.Unmarshal(x.Values, &values)
		var skipped []string
		if raw, ok := v.Schema[x.StepID]; !ok {
			for name := range values {
				skipped = append(skipped, name)
			}
			sort.Strings(skipped)
		} else if cs, err := stepcontrols.Compile(raw); err == nil {
			skipped = cs.Skipped(values)
		}
		if len(skipped) > 0 {
			if v.Skipped[x.Locale] == nil {
				v.Skipped[x.Locale] = map[string][]string{}
			}
			v.Skipped[x.Locale][x.StepID] = skipped
		}
	}
	v.Version, err = c.store.ControlsVersion(tenant, workflow)
	return v, err
}

// ControlHistory returns the versions of a workflow's controls, newest
// first, only those of step and of locale when given. Errors: 404
// workflow_not_found, 422 validation_failed (a locale in a bad shape).
func (c *Control) ControlHistory(ctx context.Context, tenant, workflow, step, locale string) ([]ControlVersion, error) {
	if locale != "" {
		var err error
		if locale, err = controlLocale(locale); err != nil {
			return nil, err
		}
	}
	if _, err := c.Controls(ctx, tenant, workflow); err != nil {
		return nil, err
	}
	all, err := c.store.ControlHistory(tenant, workflow)
	if err != nil {
		return nil, err
	}
	out := []ControlVersion{}
	for _, v := range all {
		if (step == "" || v.StepID == step) && (locale == "" || v.Locale == locale) {
			out = append(out, v)
		}
	}
	return out, nil
}
