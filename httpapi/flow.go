package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/heraldhq/herald/control"
)

// POST /v1/runs/{runId}/rerun: a failed run resumes at its failed step.
func (s *Server) rerunRun(w http.ResponseWriter, r *http.Request) error {
	runID, err := runIDVar(r)
	if err != nil {
		return err
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	if err := s.deps.Control.Rerun(r.Context(), tenantOf(r.Context()), runID, keyPrefix(bearer(r))); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "status": "running"})
	return nil
}

// POST /v1/transactions/{transactionId}/cancel: every unfinished run of
// the transaction, and those its fan-out has not started yet.
func (s *Server) cancelTransaction(w http.ResponseWriter, r *http.Request) error {
	txn, err := pathOnly(w, r, "transactionId")
	if err != nil {
		return err
	}
	n, err := s.deps.Control.CancelTransaction(r.Context(), tenantOf(r.Context()), txn, keyPrefix(bearer(r)))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, transactionCancelView{Cancelled: n})
	return nil
}

// transactionCancelView is the answer to a transaction's cancel.
type transactionCancelView struct {
	Cancelled int `json:"cancelled"`
}

// transactionSignalRequest is POST /v1/signals.
type transactionSignalRequest struct {
	Event         string          `json:"event"`
	TransactionID string          `json:"transactionId"`
	SubscriberID  *string         `json:"subscriberId"`
	Payload       json.RawMessage `json:"payload"`
}

// POST /v1/signals: a signal for every unfinished run of a transaction
// (of one subscriber, when given).
func (s *Server) signalTransaction(w http.ResponseWriter, r *http.Request) error {
	var req transactionSignalRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	n, err := s.deps.Control.SignalTransaction(r.Context(), tenantOf(r.Context()), control.TransactionSignal{
		SignalCommand: control.SignalCommand{Event: req.Event, Payload: req.Payload},
		TransactionID: req.TransactionID, SubscriberID: req.SubscriberID})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runs": n})
	return nil
}
