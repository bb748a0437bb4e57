package engine

import (
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/stepcontrols"
)

// controls returns the values of the run's step controls and their
// locale, as every execute request of the run carries them: those
// recorded at its first turn. A run not yet answered resolves them now
// and records them with its frozen subscriber (see subscriber), or in an
// event of their own, held like it, for a run without one. A run answered
// without them (started before they were recorded, or whose record went
// with its erased subscriber) resolves them at every turn.
func (t *turn) controls() (map[string]json.RawMessage, string, error) {
	if t.st.Controls != nil {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(t.st.Controls, &m); err != nil {
			return nil, "", fmt.Errorf("run %s: recorded controls: %w", t.st.RunID, err)
		}
		return m, t.st.Locale, nil
	}
	locale := ""
	if t.sub != nil {
		locale = t.sub.Locale
	}
	resolved, err := t.e.resolveControls(t.tenant, t.st.WorkflowID, locale)
	if err != nil || resolved == nil || t.st.Answered() {
		return resolved, locale, err
	}
	raw, err := json.Marshal(resolved)
	if err != nil {
		return nil, "", err
	}
	if t.frozen != nil {
		// The subscriber frozen this turn takes the controls along.
		var d events.RunSubscriberRecordedData
		prev, ok := t.frozen.Data.(json.RawMessage)
		if !ok {
			if prev, err = json.Marshal(t.frozen.Data); err != nil {
				return nil, "", err
			}
		}
		if err := json.Unmarshal(prev, &d); err != nil {
			return nil, "", err
		}
		d.Controls, d.Locale = raw, locale
		data, err := json.Marshal(d)
		if err != nil {
			return nil, "", err
		}
		t.frozen.Data = json.RawMessage(data)
		t.st.Controls, t.st.Locale = raw, locale
		return resolved, locale, nil
	}
	rec, data, err := t.newRecord(events.RunSubscriberRecorded, events.RunSubscriberRecordedData{
		Subscriber: t.st.Subscriber, Controls: raw, Locale: locale})
	if err != nil {
		return nil, "", err
	}
	st := t.st.Clone()
	if err := st.Apply(eventlog.Event{Type: rec.Type, TenantID: t.tenant, At: rec.At, Data: data, Subject: rec.Subject}); err != nil {
		return nil, "", err
	}
	t.st, t.frozen = st, &rec
	return resolved, locale, nil
}

// resolveControls returns the values of each step control of workflow
// for locale, as stored now (see stepcontrols.ResolveAll); nil when the
// workflow declares no controls.
func (e *Engine) resolveControls(tenant, workflow, locale string) (map[string]json.RawMessage, error) {
	schemas, err := e.store.ControlSchemas(tenant, workflow)
	if err != nil || len(schemas) == 0 {
		return nil, err
	}
	stored, err := e.store.ControlValues(tenant, workflow)
	if err != nil {
		return nil, err
	}
	layers := make([]stepcontrols.Stored, len(stored))
	for i, v := range stored {
		layers[i] = stepcontrols.Stored{StepID: v.StepID, Locale: v.Locale, Values: v.Values}
	}
	return stepcontrols.ResolveAll(schemas, layers, locale)
}
