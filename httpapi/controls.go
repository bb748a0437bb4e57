package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
)

// controlVersionView is one version of a step's controls: what PUT and
// revert answer, and an item of the history.
type controlVersionView struct {
	StepID string          `json:"stepId"`
	Locale string          `json:"locale"`
	Values json.RawMessage `json:"values"`
	// Version numbers the changes of the workflow's controls.
	Version      int    `json:"version"`
	RevertedFrom *int   `json:"revertedFrom,omitempty"`
	Actor        string `json:"actor"`
	At           string `json:"at,omitempty"`
}

func viewControlVersion(v control.ControlVersion) controlVersionView {
	out := controlVersionView{StepID: v.StepID, Locale: v.Locale, Values: v.Values, Version: v.Version, Actor: v.Actor}
	if out.Values == nil {
		out.Values = json.RawMessage("null")
	}
	if v.RevertedFrom != 0 {
		n := v.RevertedFrom
		out.RevertedFrom = &n
	}
	if !v.At.IsZero() {
		out.At = ts(v.At)
	}
	return out
}

type controlsView struct {
	Schema  map[string]json.RawMessage            `json:"schema"`
	Values  map[string]map[string]json.RawMessage `json:"values"`
	Version int                                   `json:"version"`
	Skipped map[string]map[string][]string        `json:"skipped"`
}

type controlHistoryView struct {
	Versions []controlVersionView `json:"versions"`
}

// workflowStep reads the {workflowId} and {stepId} of a controls route.
func workflowStep(r *http.Request) (workflow, step string, err error) {
	if workflow, err = pathVar(r, "workflowId"); err != nil {
		return "", "", err
	}
	step, err = pathVar(r, "stepId")
	return workflow, step, err
}

func (s *Server) getControls(w http.ResponseWriter, r *http.Request) error {
	workflow, err := pathVar(r, "workflowId")
	if err != nil {
		return err
	}
	v, err := s.deps.Control.Controls(r.Context(), tenantOf(r.Context()), workflow)
	return reply(w, http.StatusOK, v, err, func(v control.ControlsView) controlsView {
		return controlsView{Schema: v.Schema, Values: v.Values, Version: v.Version, Skipped: v.Skipped}
	})
}

func (s *Server) putControls(w http.ResponseWriter, r *http.Request) error {
	workflow, step, err := workflowStep(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		return errInvalidJSON
	}
	v, err := s.deps.Control.SetControls(r.Context(), tenantOf(r.Context()), workflow, step,
		r.URL.Query().Get("locale"), body, keyPrefix(bearer(r)))
	return reply(w, http.StatusOK, v, err, viewControlVersion)
}

func (s *Server) deleteControls(w http.ResponseWriter, r *http.Request) error {
	workflow, step, err := workflowStep(r)
	if err != nil {
		return err
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	return noContent(w, s.deps.Control.DeleteControls(r.Context(), tenantOf(r.Context()), workflow, step,
		r.URL.Query().Get("locale"), keyPrefix(bearer(r))))
}

func (s *Server) controlHistory(w http.ResponseWriter, r *http.Request) error {
	workflow, err := pathVar(r, "workflowId")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	vs, err := s.deps.Control.ControlHistory(r.Context(), tenantOf(r.Context()), workflow, q.Get("stepId"), q.Get("locale"))
	return reply(w, http.StatusOK, vs, err, func(vs []control.ControlVersion) controlHistoryView {
		return controlHistoryView{Versions: mapSlice(vs, viewControlVersion)}
	})
}

func (s *Server) revertControls(w http.ResponseWriter, r *http.Request) error {
	workflow, step, err := workflowStep(r)
	if err != nil {
		return err
	}
	var in struct {
		Version *int `json:"version"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Version == nil || *in.Version < 1 {
		var p apierr.Problems
		p.Add("version", "is required: a version of the step's controls, at least 1")
		return p.Err()
	}
	v, err := s.deps.Control.RevertControls(r.Context(), tenantOf(r.Context()), workflow, step, *in.Version, keyPrefix(bearer(r)))
	return reply(w, http.StatusOK, v, err, viewControlVersion)
}

// previewStepView is the step a preview rendered.
type previewStepView struct {
	StepID  string          `json:"stepId"`
	Type    string          `json:"type"`
	Channel *string         `json:"channel"`
	Content json.RawMessage `json:"content"`
}

type previewView struct {
	Step     previewStepView            `json:"step"`
	Controls map[string]json.RawMessage `json:"controls"`
	Locale   *string                    `json:"locale"`
}

// preview is POST /v1/workflows/{workflowId}/preview.
func (s *Server) preview(w http.ResponseWriter, r *http.Request) error {
	workflow, err := pathVar(r, "workflowId")
	if err != nil {
		return err
	}
	var in struct {
		StepID       string                     `json:"stepId"`
		SubscriberID *string                    `json:"subscriberId"`
		Payload      json.RawMessage            `json:"payload"`
		Locale       *string                    `json:"locale"`
		Controls     map[string]json.RawMessage `json:"controls"`
		RunID        *string                    `json:"runId"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	res, err := s.deps.Control.Preview(r.Context(), tenantOf(r.Context()), workflow, control.PreviewInput{
		StepID: in.StepID, SubscriberID: in.SubscriberID, Payload: in.Payload, Locale: in.Locale,
		Controls: in.Controls, RunID: in.RunID})
	return reply(w, http.StatusOK, res, err, func(res control.PreviewResult) previewView {
		v := previewView{Step: previewStepView{StepID: res.Step.StepID, Type: string(res.Step.Type), Content: res.Step.Content},
			Controls: res.Controls}
		if res.Step.Channel != "" {
			v.Step.Channel = &res.Step.Channel
		}
		if v.Step.Content == nil {
			v.Step.Content = json.RawMessage("null")
		}
		if v.Controls == nil {
			v.Controls = map[string]json.RawMessage{}
		}
		if res.Locale != "" {
			v.Locale = &res.Locale
		}
		return v
	})
}
