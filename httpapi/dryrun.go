package httpapi

import (
	"encoding/json"
	"net/http"
)

// dryRunRequest is POST /v1/events?dryRun=true: a trigger, and the kinds
// asked about.
type dryRunRequest struct {
	WorkflowID    string          `json:"workflowId"`
	To            *triggerTarget  `json:"to"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID *string         `json:"transactionId"`
	Kinds         []string        `json:"kinds"`
}

type dryRunCountsView struct {
	Send    int            `json:"send"`
	Skipped map[string]int `json:"skipped"`
	Held    map[string]int `json:"held"`
	Failed  map[string]int `json:"failed,omitempty"`
}

type dryRunRecipientView struct {
	SubscriberID string            `json:"subscriberId"`
	Kinds        map[string]string `json:"kinds"`
}

type dryRunView struct {
	DryRun     bool                        `json:"dryRun"`
	Recipients int                         `json:"recipients"`
	ByKind     map[string]dryRunCountsView `json:"byKind"`
	Sample     []dryRunRecipientView       `json:"sample"`
}

// dryRunTrigger answers who a trigger would reach and what each kind's
// send would do, without triggering: no event, no Bridge call.
func (s *Server) dryRunTrigger(w http.ResponseWriter, r *http.Request) error {
	var req dryRunRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	res, err := s.deps.Control.DryRunTrigger(r.Context(), tenantOf(r.Context()), triggerRequest{WorkflowID: req.WorkflowID, To: req.To, Payload: req.Payload, TransactionID: req.TransactionID}.command(), req.Kinds)
	if err != nil {
		return err
	}
	v := dryRunView{DryRun: true, Recipients: res.Recipients, ByKind: map[string]dryRunCountsView{},
		Sample: make([]dryRunRecipientView, len(res.Sample))}
	for k, n := range res.ByKind {
		v.ByKind[k] = dryRunCountsView{Send: n.Send, Skipped: n.Skipped, Held: n.Held, Failed: n.Failed}
	}
	for i, one := range res.Sample {
		v.Sample[i] = dryRunRecipientView(one)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
