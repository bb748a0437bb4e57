package httpapi

import (
	"net/http"

	"github.com/heraldhq/herald/control"
)

type workflowView struct {
	WorkflowID string  `json:"workflowId"`
	Schedule   *string `json:"schedule"`
	NextRunAt  *string `json:"nextRunAt"`
}

type workflowsView struct {
	Workflows []workflowView `json:"workflows"`
}

func viewWorkflows(wfs []control.Workflow) workflowsView {
	return workflowsView{Workflows: mapSlice(wfs, func(w control.Workflow) workflowView {
		return workflowView{WorkflowID: w.WorkflowID, Schedule: w.Schedule, NextRunAt: tsPtr(w.NextRunAt)}
	})}
}

func (s *Server) sync(w http.ResponseWriter, r *http.Request) error {
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	res, err := s.deps.Control.Sync(r.Context(), tenantOf(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewWorkflows(res))
	return nil
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	res, err := s.deps.Control.Workflows(r.Context(), tenantOf(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewWorkflows(res))
	return nil
}
