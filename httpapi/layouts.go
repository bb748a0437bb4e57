package httpapi

import (
	"context"
	"net/http"

	"github.com/heraldhq/herald/control"
)

type layoutView struct {
	LayoutID  string `json:"layoutId"`
	Name      string `json:"name"`
	HTML      string `json:"html"`
	Default   bool   `json:"default"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

func viewLayout(l control.Layout) layoutView {
	return layoutView{LayoutID: l.LayoutID, Name: l.Name, HTML: l.HTML, Default: l.Default,
		CreatedAt: ts(l.CreatedAt), UpdatedAt: ts(l.UpdatedAt)}
}

type layoutsView struct {
	Layouts []layoutView `json:"layouts"`
}

// putLayout is PUT /v1/layouts/{layoutId}: 201 when it creates the
// layout, 200 when it replaces it.
func (s *Server) putLayout(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "layoutId")
	if err != nil {
		return err
	}
	var in struct {
		Name    string `json:"name"`
		HTML    string `json:"html"`
		Default bool   `json:"default"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	l, created, err := s.deps.Control.SaveLayout(r.Context(), tenantOf(r.Context()), id,
		control.LayoutInput{Name: in.Name, HTML: in.HTML, Default: in.Default}, keyPrefix(bearer(r)))
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return reply(w, status, l, err, viewLayout)
}

func (s *Server) listLayouts(w http.ResponseWriter, r *http.Request) error {
	return serveOne(s, w, r, func() ([]control.Layout, error) {
		return s.deps.Control.Layouts(tenantOf(r.Context()))
	}, func(ls []control.Layout) layoutsView {
		out := layoutsView{Layouts: mapSlice(ls, viewLayout)}
		if out.Layouts == nil {
			out.Layouts = []layoutView{}
		}
		return out
	})
}

func (s *Server) getLayout(w http.ResponseWriter, r *http.Request) error {
	return serveByPath(s, w, r, "layoutId", func(tenant, id string) (control.Layout, error) {
		return s.deps.Control.GetLayout(r.Context(), tenant, id)
	}, viewLayout)
}

func (s *Server) deleteLayout(w http.ResponseWriter, r *http.Request) error {
	return removeByPath(w, r, "layoutId", func(ctx context.Context, tenant, id string) error {
		return s.deps.Control.DeleteLayout(ctx, tenant, id, keyPrefix(bearer(r)))
	})
}
