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
		return controlsView{Schema: v.Schema, Values: v.Values, Version: v.Version}
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
