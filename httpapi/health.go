package httpapi

import (
	"net/http"

	"github.com/heraldhq/herald/apierr"
)

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	if !s.cfg.Live() {
		return errNotLive
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) error {
	if !s.cfg.Ready() {
		return errNotReady
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

// errNotLive answers GET /healthz once the process cannot serve any more
// (its NATS connection closed for good); it exits soon after.
var errNotLive = apierr.New(apierr.CodeNotLive, "not live: the NATS connection is closed")
