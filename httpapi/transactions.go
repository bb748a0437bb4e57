package httpapi

import (
	"errors"
	"net/http"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/projections"
)

// transactionView is a transaction's progress: GET /v1/transactions and
// GET /v1/transactions/{transactionId}. Its counters are kept by the
// projector as the transaction's runs move: a read costs one row.
type transactionView struct {
	TransactionID string            `json:"transactionId"`
	WorkflowID    string            `json:"workflowId"`
	Status        string            `json:"status"`
	Recipients    *int              `json:"recipients"`
	Runs          txnRunsView       `json:"runs"`
	Deliveries    txnDeliveriesView `json:"deliveries"`
	CreatedAt     string            `json:"createdAt"`
	UpdatedAt     string            `json:"updatedAt"`
}

// txnRunsView counts a transaction's runs: started, and at each status
// now (running counts running, sleeping and waiting).
type txnRunsView struct {
	Started   int `json:"started"`
	Running   int `json:"running"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Digested  int `json:"digested"`
}

// txnDeliveriesView counts the delivery ledger rows of a transaction's
// runs by outcome.
type txnDeliveriesView struct {
	Sent    int `json:"sent"`
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
}

func viewTransaction(t projections.Transaction) transactionView {
	updated := t.UpdatedAt
	if updated.Before(t.CreatedAt) {
		updated = t.CreatedAt
	}
	return transactionView{TransactionID: t.TransactionID, WorkflowID: t.WorkflowID, Status: t.Status(),
		Recipients: t.Recipients, Runs: txnRunsView(t.Runs), Deliveries: txnDeliveriesView(t.Deliveries),
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(updated)}
}

// errNoSuchTransaction answers a transaction the tenant has none of.
var errNoSuchTransaction = apierr.New(apierr.CodeTransactionNotFound, "no such transaction")

func (s *Server) getTransaction(w http.ResponseWriter, r *http.Request) error {
	return serveByPath(s, w, r, "transactionId", func(tenant, txn string) (projections.Transaction, error) {
		t, err := s.deps.Store.TransactionProgress(tenant, txn)
		if errors.Is(err, projections.ErrNotFound) {
			return t, errNoSuchTransaction
		}
		return t, err
	}, viewTransaction)
}

func (s *Server) listTransactions(w http.ResponseWriter, r *http.Request) error {
	return servePage(s, w, r, func(p projections.Page) ([]projections.Transaction, string, error) {
		return s.deps.Store.Transactions(tenantOf(r.Context()), p)
	}, viewTransaction)
}
