package httpapi

import "net/http"

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
	if err := s.caughtUp(r); err != nil {
		return err
	}
	bb, err := s.deps.Control.Bridge(tenantOf(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, bridgeView{WebhookURL: bb.WebhookURL, Configured: true})
	return nil
}
