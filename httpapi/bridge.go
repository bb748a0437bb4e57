package httpapi

import (
	"net/http"

	"github.com/heraldhq/herald/projections"
)

type putBridgeRequest struct {
	WebhookURL string `json:"webhookUrl"`
}

// putBridge registers the Bridge URL and answers the new signing secret,
// the only time it is shown.
func (s *Server) putBridge(w http.ResponseWriter, r *http.Request) error {
	var req putBridgeRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	reg, err := s.deps.Control.ConfigureBridge(r.Context(), tenantOf(r.Context()), req.WebhookURL)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, bridgeRegistrationView(reg))
	return nil
}

// bridgeRegistrationView answers PUT /v1/bridge: the signing secret is
// shown once.
type bridgeRegistrationView struct {
	WebhookURL    string `json:"webhookUrl"`
	SigningSecret string `json:"signingSecret"`
}

type bridgeView struct {
	WebhookURL string `json:"webhookUrl"`
	Configured bool   `json:"configured"`
}

func (s *Server) getBridge(w http.ResponseWriter, r *http.Request) error {
	return serveOne(s, w, r, func() (projections.BridgeBinding, error) {
		return s.deps.Control.Bridge(tenantOf(r.Context()))
	}, func(bb projections.BridgeBinding) bridgeView {
		return bridgeView{WebhookURL: bb.WebhookURL, Configured: true}
	})
}
