package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/delivery"
)

// Ids at the edge: every id a request carries in its path, query or
// headers is checked against its contract bound here or in the command it
// reaches, before it can reach a subject (eventlog refuses an over-long
// subject as the last line; see eventlog.ErrBadSubject). A path id not of
// its form names nothing (404); a query id out of bounds is 422; a body id
// is checked by its command (422).

// errNoSuchRun answers a {runId} that is not of the minted form, without
// echoing it.
var errNoSuchRun = apierr.New(apierr.CodeRunNotFound, "no such run")

// errBadTenantHeader answers POST /v1/deliver with a valid internal token
// and an x-herald-tenant-id that is not a minted tenant id: like a minted
// id nobody holds, it names a tenant with no channel (422 no_channel),
// and it never reaches a subject.
var errBadTenantHeader = fmt.Errorf("%w: x-herald-tenant-id names no tenant", delivery.ErrNoChannel)

// maxDeliveryIDBytes is the bound POST /v1/deliver puts on the ids it
// records (delivery.Request.Validate): GET /v1/deliveries?runId= finds
// any run id a delivery was recorded under, not only minted ones.
const maxDeliveryIDBytes = 1024

// runIDVar returns the {runId} path parameter; one that is not of the
// minted form ("run_" + 24 hex digits) is run_not_found.
func runIDVar(r *http.Request) (string, error) {
	id, err := pathVar(r, "runId")
	if err != nil {
		return "", err
	}
	if !control.ValidRunID(id) {
		return "", errNoSuchRun
	}
	return id, nil
}

// checkQueryIDs adds a problem for every id filter of the query that is
// given (not empty) and out of its bounds: transactionId (1–128 printable
// characters), subscriberId (an externalId: 1–256 printable), runId (a
// delivery's run id: at most 1 KiB of printable text) and status (a run
// status).
func checkQueryIDs(r *http.Request, p *apierr.Problems) {
	checkIDFilters(r, p)
	if v := r.URL.Query().Get("status"); v != "" && !slices.Contains(control.RunStatuses, v) {
		p.Add("status", "must be one of running, sleeping, waiting, completed, failed, cancelled, digested")
	}
}

// checkIDFilters is checkQueryIDs but the status: the id filters alone.
func checkIDFilters(r *http.Request, p *apierr.Problems) {
	q := r.URL.Query()
	if v := q.Get("transactionId"); v != "" && !control.ValidTransactionID(v) {
		p.Add("transactionId", "must be 1 to %d printable characters", control.MaxTxnIDChars)
	}
	if v := q.Get("subscriberId"); v != "" && !control.ValidExternalID(v) {
		p.Add("subscriberId", "must be 1 to %d printable characters", control.MaxExternalIDChars)
	}
	if v := q.Get("runId"); v != "" && (len(v) > maxDeliveryIDBytes || !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl)) {
		p.Add("runId", "must be at most %d bytes of printable text", maxDeliveryIDBytes)
	}
	if v := q.Get("workflowId"); v != "" && !control.ValidWorkflowID(v) {
		p.Add("workflowId", "must be a workflow id of at most %d characters", control.MaxWorkflowIDChars)
	}
}
