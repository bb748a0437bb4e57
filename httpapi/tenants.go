package httpapi

import (
	"net/http"

	"github.com/heraldhq/herald/projections"
)

// newTenantView answers a tenant's creation: its first API key is shown
// once.
type newTenantView struct {
	TenantID string `json:"tenantId"`
	Name     string `json:"name"`
	APIKey   string `json:"apiKey"`
}

// newAPIKeyView answers an API key's creation: the key is shown once.
type newAPIKeyView struct {
	APIKey string `json:"apiKey"`
	Prefix string `json:"prefix"`
}

type createTenantRequest struct {
	Name string `json:"name"`
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) error {
	var req createTenantRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	t, err := s.deps.Control.CreateTenant(r.Context(), req.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, newTenantView(t))
	return nil
}

func (s *Server) adminCreateAPIKey(w http.ResponseWriter, r *http.Request) error {
	tenant, err := pathOnly(w, r, "tenantId")
	if err != nil {
		return err
	}
	k, err := s.deps.Control.CreateAPIKey(r.Context(), tenant)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, newAPIKeyView(k))
	return nil
}

func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	k, err := s.deps.Control.CreateAPIKey(r.Context(), tenantOf(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, newAPIKeyView(k))
	return nil
}

type apiKeyView struct {
	Prefix    string `json:"prefix"`
	CreatedAt string `json:"createdAt"`
}

func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	return servePage(s, w, r, func(p projections.Page) ([]projections.APIKey, string, error) {
		return s.deps.Control.APIKeys(tenantOf(r.Context()), p)
	}, func(k projections.APIKey) apiKeyView {
		return apiKeyView{Prefix: k.Prefix, CreatedAt: ts(k.CreatedAt)}
	})
}

func (s *Server) revokeAPIKey(w http.ResponseWriter, r *http.Request) error {
	return removeByPath(w, r, "prefix", s.deps.Control.RevokeAPIKey)
}

type tenantView struct {
	TenantID  string `json:"tenantId"`
	Name      string `json:"name"`
	CreatedAt string `json:"createdAt"`
}

func (s *Server) adminListTenants(w http.ResponseWriter, r *http.Request) error {
	return servePage(s, w, r, s.deps.Control.Tenants, func(t projections.Tenant) tenantView {
		return tenantView{TenantID: t.TenantID, Name: t.Name, CreatedAt: ts(t.CreatedAt)}
	})
}

func (s *Server) adminListAPIKeys(w http.ResponseWriter, r *http.Request) error {
	tenant, err := pathVar(r, "tenantId")
	if err != nil {
		return err
	}
	return servePage(s, w, r, func(p projections.Page) ([]projections.APIKey, string, error) {
		return s.deps.Control.TenantAPIKeys(tenant, p)
	}, func(k projections.APIKey) apiKeyView {
		return apiKeyView{Prefix: k.Prefix, CreatedAt: ts(k.CreatedAt)}
	})
}

func (s *Server) adminRevokeAPIKey(w http.ResponseWriter, r *http.Request) error {
	tenant, err := pathVar(r, "tenantId")
	if err != nil {
		return err
	}
	prefix, err := pathVar(r, "prefix")
	if err != nil {
		return err
	}
	return noContent(w, s.deps.Control.RevokeAPIKey(r.Context(), tenant, prefix))
}
