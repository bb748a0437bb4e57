package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/projections"
)

// triggerRequest is POST /v1/events.
type triggerRequest struct {
	WorkflowID    string          `json:"workflowId"`
	To            *triggerTarget  `json:"to"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID *string         `json:"transactionId"`
}

// triggerTarget is a trigger's `to`: exactly one of subscriberId and
// topics, each told apart from its absence.
type triggerTarget struct {
	SubscriberID *string   `json:"subscriberId"`
	Topics       *[]string `json:"topics"`
}

func (r triggerRequest) command() control.TriggerCommand {
	cmd := control.TriggerCommand{WorkflowID: r.WorkflowID, Payload: r.Payload, TransactionID: r.TransactionID}
	if r.To != nil {
		cmd.To = &control.TriggerTarget{SubscriberID: r.To.SubscriberID, Topics: r.To.Topics}
	}
	return cmd
}

// runRefView is one run of a trigger's answer.
type runRefView struct {
	RunID        string `json:"runId,omitempty"`
	SubscriberID string `json:"subscriberId"`
	Status       string `json:"status"`
}

// triggerView is the answer to a trigger.
type triggerView struct {
	TransactionID string       `json:"transactionId"`
	Runs          []runRefView `json:"runs"`
}

func (s *Server) trigger(w http.ResponseWriter, r *http.Request) error {
	switch r.URL.Query().Get("dryRun") {
	case "", "false", "0":
	case "true", "1":
		return s.dryRunTrigger(w, r)
	default:
		var p apierr.Problems
		p.Add("dryRun", "must be true or false")
		return p.Err()
	}
	var req triggerRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	res, err := s.deps.Control.Trigger(r.Context(), tenantOf(r.Context()), req.command())
	if err != nil {
		return err
	}
	writeTrigger(w, res)
	return nil
}

// writeTrigger writes the answer to a trigger run by run, byte for byte
// as writeJSON would write it whole, without holding the whole encoding
// (about 90 bytes a run) in memory.
func writeTrigger(w http.ResponseWriter, res control.TriggerResult) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	// A buffer for the answer's size, up to 32 KiB: a trigger to one
	// subscriber (the most frequent) allocates a few hundred bytes, not
	// the large buffer a fan-out's long list of runs wants.
	bw := bufio.NewWriterSize(w, min(32<<10, 256*(1+len(res.Runs))))
	bw.WriteString(`{`)
	writeTriggerFields(bw, res)
	bw.WriteString("}\n")
	_ = bw.Flush()
}

// writeTriggerFields writes the fields of a trigger's answer: its
// transaction and runs, or for a broadcast (answered before its fan-out)
// "runs":null and the count of its recipients.
func writeTriggerFields(bw *bufio.Writer, res control.TriggerResult) {
	txn, _ := json.Marshal(res.TransactionID)
	bw.WriteString(`"transactionId":`)
	bw.Write(txn)
	if res.Recipients != nil {
		fmt.Fprintf(bw, `,"runs":null,"recipients":%d`, *res.Recipients)
		return
	}
	bw.WriteString(`,"runs":[`)
	for i, run := range res.Runs {
		if i > 0 {
			bw.WriteByte(',')
		}
		b, _ := json.Marshal(runRefView(run))
		bw.Write(b)
	}
	bw.WriteString("]")
}

// signalRequest is POST /v1/events/{runId}/signal.
type signalRequest struct {
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
}

type signalView struct {
	RunID    string `json:"runId"`
	Event    string `json:"event"`
	Accepted bool   `json:"accepted"`
}

func (s *Server) signal(w http.ResponseWriter, r *http.Request) error {
	runID, err := runIDVar(r)
	if err != nil {
		return err
	}
	var req signalRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := s.deps.Control.Signal(r.Context(), tenantOf(r.Context()), runID,
		control.SignalCommand{Event: req.Event, Payload: req.Payload}); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, signalView{RunID: runID, Event: req.Event, Accepted: true})
	return nil
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	runID, err := runIDVar(r)
	if err != nil {
		return err
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	if err := s.deps.Control.Cancel(r.Context(), tenantOf(r.Context()), runID, keyPrefix(bearer(r))); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "status": control.StatusCancelled})
	return nil
}

// runView is a run as the API shows it.
type runView struct {
	RunID         string     `json:"runId"`
	TransactionID string     `json:"transactionId"`
	WorkflowID    string     `json:"workflowId"`
	SubscriberID  *string    `json:"subscriberId"`
	Status        string     `json:"status"`
	Steps         []stepView `json:"steps"`
	Error         *errorView `json:"error"`
	CreatedAt     string     `json:"createdAt"`
	UpdatedAt     string     `json:"updatedAt"`
}

type stepView struct {
	StepID   string     `json:"stepId"`
	Type     string     `json:"type"`
	Status   string     `json:"status"`
	Attempts int        `json:"attempts"`
	Output   any        `json:"output"`
	Error    *errorView `json:"error"`
}

// errorView is a run's or a step's failure.
type errorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func viewRun(st *projections.Run) runView {
	v := runView{RunID: st.RunID, TransactionID: st.TransactionID, WorkflowID: st.WorkflowID,
		SubscriberID: st.SubscriberID, Status: string(st.Status), Error: (*errorView)(st.Error),
		CreatedAt: ts(st.CreatedAt), UpdatedAt: ts(st.UpdatedAt), Steps: make([]stepView, 0, len(st.Steps))}
	for _, s := range st.Steps {
		sv := stepView{StepID: s.StepID, Type: s.Type, Status: s.Status, Attempts: s.Attempts, Error: (*errorView)(s.Error)}
		if len(s.Output) > 0 {
			sv.Output = s.Output
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	runID, err := runIDVar(r)
	if err != nil {
		return err
	}
	return serveOne(s, w, r, func() (*projections.Run, error) {
		run, err := s.deps.Store.RunState(tenantOf(r.Context()), runID)
		if errors.Is(err, projections.ErrNotFound) {
			// Never started, or gone with the retention: the same answer.
			return nil, errNoSuchRun
		}
		return run, err
	}, viewRun)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	return servePage(s, w, r, checkingQueryIDs(r, func(p projections.Page) ([]*projections.Run, string, error) {
		return s.deps.Store.Runs(tenantOf(r.Context()), projections.RunFilter{
			TransactionID: q.Get("transactionId"), SubscriberID: q.Get("subscriberId"), Status: q.Get("status"),
			WorkflowID: q.Get("workflowId")}, p)
	}), viewRun)
}

type notificationView struct {
	TransactionID string  `json:"transactionId"`
	SubscriberID  string  `json:"subscriberId"`
	WorkflowID    string  `json:"workflowId"`
	RunID         *string `json:"runId"`
	Status        string  `json:"status"`
	CreatedAt     string  `json:"createdAt"`
}

func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request) error {
	return servePage(s, w, r, checkingQueryIDs(r, func(p projections.Page) ([]projections.Notification, string, error) {
		return s.deps.Store.Notifications(tenantOf(r.Context()), r.URL.Query().Get("transactionId"), p)
	}), func(n projections.Notification) notificationView {
		v := notificationView{TransactionID: n.TransactionID, SubscriberID: n.SubscriberID, WorkflowID: n.WorkflowID,
			Status: n.Status, CreatedAt: ts(n.CreatedAt)}
		if n.RunID != "" {
			v.RunID = &n.RunID
		}
		return v
	})
}
