package httpapi

import (
	"net/http"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
)

type checkRequest struct {
	BridgeURL     string `json:"bridgeUrl"`
	SigningSecret string `json:"signingSecret"`
	WorkflowID    string `json:"workflowId"`
	Since         string `json:"since"`
	Max           int    `json:"max"`
}

type checkView struct {
	Checked  int              `json:"checked"`
	OK       int              `json:"ok"`
	Breaking []checkBreakView `json:"breaking"`
}

type checkStepView struct {
	StepID string `json:"stepId,omitempty"`
	Type   string `json:"type,omitempty"`
	Error  string `json:"error,omitempty"`
}

type checkBreakView struct {
	RunID      string        `json:"runId"`
	WorkflowID string        `json:"workflowId"`
	Status     string        `json:"status"`
	Position   int           `json:"position"`
	Recorded   checkStepView `json:"recorded"`
	Candidate  checkStepView `json:"candidate"`
}

// postCheck replays the tenant's recorded runs against a candidate Bridge
// and answers which would break. Nothing is written.
func (s *Server) postCheck(w http.ResponseWriter, r *http.Request) error {
	var req checkRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	cmd := control.CheckCommand{BridgeURL: req.BridgeURL, SigningSecret: req.SigningSecret, WorkflowID: req.WorkflowID, Max: req.Max}
	if req.Since != "" {
		d, err := time.ParseDuration(req.Since)
		if err != nil || d <= 0 {
			var p apierr.Problems
			p.Add("since", "must be a positive duration such as \"168h\"")
			return p.Err()
		}
		cmd.Since = d
	}
	if req.Max < 0 {
		var p apierr.Problems
		p.Add("max", "must be between 1 and %d", control.MaxCheckMax)
		return p.Err()
	}
	rep, err := s.deps.Control.Check(r.Context(), tenantOf(r.Context()), cmd)
	if err != nil {
		return err
	}
	v := checkView{Checked: rep.Checked, OK: rep.OK, Breaking: make([]checkBreakView, 0, len(rep.Breaking))}
	for _, b := range rep.Breaking {
		bv := checkBreakView{RunID: b.RunID, WorkflowID: b.WorkflowID, Status: b.Status, Position: b.Position,
			Recorded:  checkStepView{StepID: b.Recorded.StepID, Type: string(b.Recorded.Type)},
			Candidate: checkStepView{Error: b.CandidateError}}
		if b.Candidate != nil {
			bv.Candidate = checkStepView{StepID: b.Candidate.StepID, Type: string(b.Candidate.Type)}
		}
		v.Breaking = append(v.Breaking, bv)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
