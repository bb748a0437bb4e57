package httpapi

import (
	"net/http"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/projections"
)

// suppressionView is a suppression as the API shows it.
// The address of a suppression whose subscriber was erased is null: the
// suppression still holds, matched by a digest of the address.
type suppressionView struct {
	Kind      string  `json:"kind"`
	Address   *string `json:"address"`
	Reason    string  `json:"reason"`
	CreatedAt string  `json:"createdAt"`
}

func newSuppressionView(s projections.Suppression) suppressionView {
	v := suppressionView{Kind: s.Kind, Reason: s.Reason, CreatedAt: ts(s.CreatedAt)}
	if !s.Erased {
		v.Address = &s.Address
	}
	return v
}

// suppressRequest is the body of PUT /v1/suppressions/{kind}/{address}:
// {} or {"reason"}; a null reason is the default.
type suppressRequest struct {
	Reason *string `json:"reason"`
}

func (s *Server) putSuppression(w http.ResponseWriter, r *http.Request) error {
	kind, address, err := suppressionVars(r)
	if err != nil {
		return err
	}
	var in suppressRequest
	if err := decode(w, r, &in); err != nil {
		return err
	}
	row, created, err := s.deps.Control.Suppress(r.Context(), tenantOf(r.Context()),
		control.SuppressCommand{Kind: kind, Address: address, Reason: in.Reason})
	return reply(w, createdOr(created), row, err, newSuppressionView)
}

func (s *Server) deleteSuppression(w http.ResponseWriter, r *http.Request) error {
	kind, address, err := suppressionVars(r)
	if err != nil {
		return err
	}
	return noContent(w, s.deps.Control.Unsuppress(r.Context(), tenantOf(r.Context()), kind, address))
}

// maxSuppressionCursorBytes bounds ?cursor= of GET /v1/suppressions: its
// cursor encodes a kind and an address, and a push token may be 4096
// characters (of ASCII), more than maxCursorBytes allows.
const maxSuppressionCursorBytes = 8 << 10

func (s *Server) listSuppressions(w http.ResponseWriter, r *http.Request) error {
	p, err := pageUpTo(r, maxSuppressionCursorBytes)
	if err != nil {
		return err
	}
	return answerPage(s, w, r, p, func(p projections.Page) ([]projections.Suppression, string, error) {
		return s.deps.Control.Suppressions(tenantOf(r.Context()), r.URL.Query().Get("kind"), p)
	}, newSuppressionView)
}

// suppressionVars reads {kind} and {address}, percent-decoded.
func suppressionVars(r *http.Request) (kind, address string, err error) {
	if kind, err = pathVar(r, "kind"); err != nil {
		return "", "", err
	}
	if address, err = pathVar(r, "address"); err != nil {
		return "", "", err
	}
	return kind, address, nil
}
