package httpapi

import (
	"net/http"
	"slices"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/runstate"
)

// Ids at the edge: every id a request carries in its path, query or
// headers is checked against its contract bound here or in the command it
// reaches, before it can reach a subject (eventlog refuses an over-long
// subject as the last line; see eventlog.ErrBadSubject). A path id not of
// its form names nothing (404); a query id out of bounds is 422; a body id
// is checked by its command (422).

// errNoSuchRun answers a {runId} that is not of the minted form, without
// echoing it.
var errNoSuchRun = &control.Error{Kind: control.ErrNotFound, Code: "run_not_found", Message: "no such run"}

// errBadTenantHeader answers POST /v1/deliver with a valid internal token
// and an x-herald-tenant-id that is not a minted tenant id.
var errBadTenantHeader = &control.Error{Kind: control.ErrInvalid, Code: "invalid_tenant",
	Message: "x-herald-tenant-id must be a tenant id (ten_ and 16 letters or digits)"}

// runIDVar returns the {runId} path parameter; one that is not of the
// minted form ("run_" + 24 hex digits) is run_not_found.
func runIDVar(r *http.Request) (string, error) {
	id, err := pathVar(r, "runId")
	if err != nil {
		return "", err
	}
	if !engine.ValidRunID(id) {
		return "", errNoSuchRun
	}
	return id, nil
}

// runStatuses are the values of ?status=.
var runStatuses = []runstate.Status{runstate.Running, runstate.Sleeping, runstate.Waiting,
	runstate.Completed, runstate.Failed, runstate.Cancelled, runstate.Digested}

// checkQueryIDs adds a problem for every id filter of the query that is
// given (not empty) and out of its bounds: transactionId (1–128 printable
// characters), subscriberId (an externalId: 1–256 printable), runId (a
// minted run id) and status (a run status).
func checkQueryIDs(r *http.Request, p *control.Problems) {
	q := r.URL.Query()
	if v := q.Get("transactionId"); v != "" && !engine.ValidTransactionID(v) {
		p.Add("transactionId", "must be 1 to %d printable characters", engine.MaxTxnIDChars)
	}
	if v := q.Get("subscriberId"); v != "" && !control.ValidExternalID(v) {
		p.Add("subscriberId", "must be 1 to %d printable characters", control.MaxExternalIDChars)
	}
	if v := q.Get("runId"); v != "" && !engine.ValidRunID(v) {
		p.Add("runId", "must be a run id (run_ and 24 hex digits)")
	}
	if v := q.Get("status"); v != "" && !slices.Contains(runStatuses, runstate.Status(v)) {
		p.Add("status", "must be one of running, sleeping, waiting, completed, failed, cancelled, digested")
	}
}
