package httpapi

import (
	"net/http"

	"github.com/heraldhq/herald/engine"
)

type workflowView struct {
	WorkflowID string  `json:"workflowId"`
	Schedule   *string `json:"schedule"`
	NextRunAt  *string `json:"nextRunAt"`
}

type workflowsView struct {
	Workflows []workflowView `json:"workflows"`
}

func viewWorkflows(res engine.SyncResult) workflowsView {
	return workflowsView{Workflows: mapSlice(res.Workflows, func(w engine.WorkflowView) workflowView {
		return workflowView{WorkflowID: w.WorkflowID, Schedule: w.Schedule, NextRunAt: tsPtr(w.NextRunAt)}
	})}
}

func (s *Server) sync(w http.ResponseWriter, r *http.Request) error {
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	res, err := s.deps.Engine.Sync(r.Context(), tenantOf(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewWorkflows(res))
	return nil
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	res, err := s.deps.Engine.Workflows(r.Context(), tenantOf(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewWorkflows(res))
	return nil
}
