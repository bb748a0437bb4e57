package httpapi

import "net/http"

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
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
