package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/preferences"
)

// viewPreferences is a subscriber's preferences as CONTRACT §11 shows
// them: both maps present, only what was set inside.
func viewPreferences(d preferences.Doc) preferences.Doc { return d.Clone() }

func (s *Server) getPreferences(w http.ResponseWriter, r *http.Request) error {
	return serveByPath(s, w, r, "externalId", s.deps.Control.Preferences, viewPreferences)
}

func (s *Server) patchPreferences(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "externalId")
	if err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		return errInvalidJSON
	}
	doc, err := s.deps.Control.PatchPreferences(r.Context(), tenantOf(r.Context()), id, body, keyPrefix(bearer(r)))
	return reply(w, http.StatusOK, doc, err, viewPreferences)
}

// keyPrefix is the public prefix ("hk_" and 8 characters) of an API key
// that authenticated: what the audit shows of who acted, never the key.
func keyPrefix(key string) string {
	rest, ok := strings.CutPrefix(key, "hk_")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "_")
	return "hk_" + id
}
