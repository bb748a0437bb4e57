package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/projections"
)

// catalogEntryView is one element of GET /v1/channels/catalog.
type catalogEntryView struct {
	ChannelKey string             `json:"channelKey"`
	Kind       string             `json:"kind"`
	Label      string             `json:"label"`
	Fields     []catalogFieldView `json:"fields"`
}

type catalogFieldView struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Secret   bool   `json:"secret"`
}

func (s *Server) channelCatalog(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, mapSlice(delivery.Catalog(), func(e delivery.CatalogEntry) catalogEntryView {
		return catalogEntryView{ChannelKey: e.ChannelKey, Kind: e.Kind, Label: e.Label,
			Fields: mapSlice(e.Fields, func(f delivery.Field) catalogFieldView {
				return catalogFieldView{Name: f.Name, Type: f.Type, Required: f.Required, Secret: f.Secret}
			})}
	}))
	return nil
}

// channelView is the safe view of a channel: never any of its config.
type channelView struct {
	ChannelKey string `json:"channelKey"`
	Kind       string `json:"kind"`
	Label      string `json:"label"`
	Enabled    bool   `json:"enabled"`
	Priority   int    `json:"priority"`
	Configured bool   `json:"configured"`
	CreatedAt  string `json:"createdAt"`
	// InboundURL is where the channel's provider posts its delivery
	// events; absent without a public URL.
	InboundURL string `json:"inboundUrl,omitempty"`
}

// safeView builds the safe view of ch. configured says whether the stored
// config holds every field the catalog entry requires today (true for
// every config accepted so far; false if the catalog later requires a
// field the channel lacks).
func safeView(ch projections.Channel) channelView {
	v := channelView{ChannelKey: ch.ChannelKey, Kind: ch.Kind, Enabled: ch.Enabled, Priority: ch.Priority,
		CreatedAt: ts(ch.CreatedAt)}
	if entry, ok := delivery.LookupChannel(ch.ChannelKey); ok {
		v.Label = entry.Label
		v.Configured = true
		for _, f := range entry.Fields {
			_, public := ch.Public[f.Name]
			_, sealed := ch.Sealed[f.Name]
			if f.Required && !public && !sealed {
				v.Configured = false
			}
		}
	}
	return v
}

func (s *Server) listChannels(w http.ResponseWriter, r *http.Request) error {
	return serveOne(s, w, r, func() ([]projections.Channel, error) {
		return s.deps.Control.Channels(tenantOf(r.Context()))
	}, func(chs []projections.Channel) []channelView {
		return mapSlice(chs, s.channelView(tenantOf(r.Context())))
	})
}

type createChannelRequest struct {
	ChannelKey string          `json:"channelKey"`
	Config     json.RawMessage `json:"config"`
	Enabled    *bool           `json:"enabled"`
	Priority   *int            `json:"priority"`
}

// createChannel answers 201 with the safe view on a create and on a repeat
// alike (a repeat updates the channel and re-enables it).
func (s *Server) createChannel(w http.ResponseWriter, r *http.Request) error {
	var req createChannelRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	ch, err := s.deps.Control.ConfigureChannel(r.Context(), tenantOf(r.Context()), control.ChannelInput{
		ChannelKey: req.ChannelKey, Config: req.Config, Enabled: req.Enabled, Priority: req.Priority,
	})
	return reply(w, http.StatusCreated, ch, err, s.channelView(tenantOf(r.Context())))
}

type patchChannelRequest struct {
	Config  json.RawMessage `json:"config"`
	Enabled *bool           `json:"enabled"`
}

func (s *Server) patchChannel(w http.ResponseWriter, r *http.Request) error {
	key, err := pathVar(r, "key")
	if err != nil {
		return err
	}
	var req patchChannelRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	ch, err := s.deps.Control.UpdateChannel(r.Context(), tenantOf(r.Context()), key,
		control.ChannelPatch{Config: req.Config, Enabled: req.Enabled})
	return reply(w, http.StatusOK, ch, err, s.channelView(tenantOf(r.Context())))
}

func (s *Server) deleteChannel(w http.ResponseWriter, r *http.Request) error {
	return removeByPath(w, r, "key", s.deps.Control.DeleteChannel)
}
