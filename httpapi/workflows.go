package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
)

type workflowView struct {
	WorkflowID string  `json:"workflowId"`
	Schedule   *string `json:"schedule"`
	NextRunAt  *string `json:"nextRunAt"`
	// Critical and Preferences are what the workflow declared at discover
	// (CONTRACT §11); Preferences is null without defaults.
	Critical    bool                 `json:"critical"`
	Preferences *workflowPreferences `json:"preferences"`
	// Name and Description are the workflow's display text as discover
	// declared it; null when not declared.
	Name        *string `json:"name"`
	Description *string `json:"description"`
	// PayloadSchema is the schema a trigger's payload is checked against;
	// null for none.
	PayloadSchema json.RawMessage `json:"payloadSchema"`
}

type workflowPreferences struct {
	Channels map[string]bool `json:"channels"`
}

type workflowsView struct {
	Workflows []workflowView `json:"workflows"`
}

func viewWorkflows(wfs []control.Workflow) workflowsView {
	return workflowsView{Workflows: mapSlice(wfs, func(w control.Workflow) workflowView {
		v := workflowView{WorkflowID: w.WorkflowID, Schedule: w.Schedule, NextRunAt: tsPtr(w.NextRunAt), Critical: w.Critical}
		if w.Name != "" {
			v.Name = &w.Name
		}
		if w.Description != "" {
			v.Description = &w.Description
		}
		v.PayloadSchema = w.PayloadSchema
		if v.PayloadSchema == nil {
			v.PayloadSchema = json.RawMessage("null")
		}
		if w.DefaultChannels != nil {
			v.Preferences = &workflowPreferences{Channels: w.DefaultChannels}
		}
		return v
	})}
}

// syncView is the answer to POST /v1/sync: the workflows, and the ids of
// the last sync's workflows this one drops.
type syncView struct {
	workflowsView
	Removed []string `json:"removed"`
}

// sync is POST /v1/sync; ?dryRun=true answers the same and changes
// nothing.
func (s *Server) sync(w http.ResponseWriter, r *http.Request) error {
	var dryRun bool
	switch r.URL.Query().Get("dryRun") {
	case "", "false", "0":
	case "true", "1":
		dryRun = true
	default:
		var p apierr.Problems
		p.Add("dryRun", "must be true or false")
		return p.Err()
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	res, err := s.deps.Control.Sync(r.Context(), tenantOf(r.Context()), dryRun)
	return reply(w, http.StatusOK, res, err, func(res control.SyncResult) syncView {
		return syncView{workflowsView: viewWorkflows(res.Workflows), Removed: res.Removed}
	})
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	res, err := s.deps.Control.Workflows(r.Context(), tenantOf(r.Context()))
	return reply(w, http.StatusOK, res, err, viewWorkflows)
}
