package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
)

// ChannelInput is the command of POST /v1/channels.
type ChannelInput struct {
	// ChannelKey names the catalog entry. Required.
	ChannelKey string
	// Config is the raw JSON of the config, validated against the catalog
	// entry's schema. Required.
	Config json.RawMessage
	// Enabled is the channel's state after the call. Zero (nil): true,
	// on a create and on a repeat alike.
	Enabled *bool
	// Priority, an integer >= 0, orders the channels of a kind (lower is
	// tried first). Zero (nil): 0 on a create; the current priority on a
	// repeat.
	Priority *int
}

// ChannelPatch is the command of PATCH /v1/channels/{key}. At least one
// field must be set.
type ChannelPatch struct {
	// Config, when set, replaces the whole config (no merge); it is
	// validated as on a create.
	Config json.RawMessage
	// Enabled, when set, switches the channel on or off.
	Enabled *bool
}

// ConfigureChannel creates the tenant's channel of in.ChannelKey or, when
// it exists, replaces its config and sets enabled (true unless sent) and
// priority (kept unless sent): POST is idempotent on (tenant, channelKey)
// and never makes a second channel. Secret fields are sealed before the
// event is built. It returns the channel as the projections hold it.
//
// Errors: a *apierr.ValidationError (apierr.ErrInvalid) naming channelKey, config,
// config.<field> or priority; an *apierr.Error of kind apierr.ErrNotFound with code
// unknown_channel for a key the catalog does not hold.
func (c *Control) ConfigureChannel(ctx context.Context, tenant string, in ChannelInput) (projections.Channel, error) {
	var p apierr.Problems
	if in.ChannelKey == "" {
		p.Add("channelKey", "is required")
	}
	if len(in.Config) == 0 {
		p.Add("config", "is required")
	}
	if in.Priority != nil && *in.Priority < 0 {
		p.Add("priority", "must be an integer >= 0")
	}
	entry, known := delivery.LookupChannel(in.ChannelKey)
	if in.ChannelKey != "" && !known {
		return projections.Channel{}, unknownChannel()
	}
	var cfg events.ChannelConfig
	if known && len(in.Config) > 0 {
		var err error
		if cfg, err = c.sealConfig(ctx, tenant, entry, in.Config, &p); err != nil {
			return projections.Channel{}, err
		}
	}
	if err := p.Err(); err != nil {
		return projections.Channel{}, err
	}
	enabled := in.Enabled == nil || *in.Enabled
	subject := eventlog.Subject(tenant, eventlog.AggChannel, entry.ChannelKey)
	err := c.update(ctx, subject, func(seq uint64) error {
		cur, err := current(c.store.Channel(tenant, entry.ChannelKey))
		if err != nil {
			return err
		}
		priority := 0
		if cur != nil {
			priority = cur.Priority
		}
		if in.Priority != nil {
			priority = *in.Priority
		}
		_, err = c.commit(ctx, eventlog.Record{
			Subject: subject, Type: events.ChannelConfigured, Tenant: tenant,
			Data: events.ChannelConfiguredData{
				ChannelKey: entry.ChannelKey, Kind: entry.Kind, Config: cfg,
				Enabled: enabled, Priority: priority,
			},
			Expect: true, ExpectSeq: seq,
		})
		return err
	})
	if err != nil {
		return projections.Channel{}, err
	}
	return c.store.Channel(tenant, entry.ChannelKey)
}

// UpdateChannel applies a PATCH to one of the tenant's channels: a set
// Config replaces the whole config, a set Enabled switches it; what is not
// set is left as it was. It returns the channel as the projections hold
// it.
//
// Errors: an *apierr.Error of kind apierr.ErrBadRequest with code empty_patch when
// neither field is set; apierr.ErrNotFound (channel_not_found) when the tenant
// has no such channel; a *apierr.ValidationError naming config fields.
func (c *Control) UpdateChannel(ctx context.Context, tenant, channelKey string, patch ChannelPatch) (projections.Channel, error) {
	if len(patch.Config) == 0 && patch.Enabled == nil {
		return projections.Channel{}, apierr.Errorf(apierr.CodeEmptyPatch, "a patch needs config, enabled or both")
	}
	entry, known := delivery.LookupChannel(channelKey)
	if !known {
		return projections.Channel{}, channelNotFound(channelKey)
	}
	subject := eventlog.Subject(tenant, eventlog.AggChannel, channelKey)
	err := c.update(ctx, subject, func(seq uint64) error {
		if _, err := c.store.Channel(tenant, channelKey); err != nil {
			return channelErr(err, channelKey)
		}
		d := events.ChannelUpdatedData{ChannelKey: channelKey, Enabled: patch.Enabled}
		if len(patch.Config) > 0 {
			var p apierr.Problems
			cfg, err := c.sealConfig(ctx, tenant, entry, patch.Config, &p)
			if err != nil {
				return err
			}
			if err := p.Err(); err != nil {
				return err
			}
			d.Config = &cfg
		}
		_, err := c.commit(ctx, eventlog.Record{Subject: subject, Type: events.ChannelUpdated, Tenant: tenant,
			Data: d, Expect: true, ExpectSeq: seq})
		return err
	})
	if err != nil {
		return projections.Channel{}, err
	}
	return c.store.Channel(tenant, channelKey)
}

// DeleteChannel removes one of the tenant's channels, or fails with
// apierr.ErrNotFound (channel_not_found).
func (c *Control) DeleteChannel(ctx context.Context, tenant, channelKey string) error {
	if _, known := delivery.LookupChannel(channelKey); !known {
		return channelNotFound(channelKey)
	}
	subject := eventlog.Subject(tenant, eventlog.AggChannel, channelKey)
	return c.appendIfFound(ctx, tenant, subject, events.ChannelDeleted, events.ChannelDeletedData{ChannelKey: channelKey},
		func() error {
			_, err := c.store.Channel(tenant, channelKey)
			return channelErr(err, channelKey)
		})
}

// Channels returns every channel of the tenant in channelKey order, as
// the local projections hold them.
func (c *Control) Channels(tenant string) ([]projections.Channel, error) {
	return c.store.Channels(tenant)
}

// sealConfig validates raw against entry's schema, adding each problem to
// p, and when it is valid splits it and seals its secret fields for
// tenant. The error is for failures other than validation.
func (c *Control) sealConfig(ctx context.Context, tenant string, entry delivery.CatalogEntry, raw json.RawMessage, p *apierr.Problems) (events.ChannelConfig, error) {
	problems := entry.Validate(ctx, raw)
	*p = append(*p, problems...)
	if len(problems) > 0 {
		return events.ChannelConfig{}, nil
	}
	var config map[string]any
	if err := json.Unmarshal(raw, &config); err != nil {
		return events.ChannelConfig{}, err
	}
	// Every destination the catalog marks is checked here, whatever the
	// provider: a field the catalog marks cannot be forgotten.
	for _, d := range entry.Destinations(config) {
		problem := c.checkDestinationHost(ctx, d.Host)
		if d.Host == "" && c.egress != nil {
			problem = "must be an http(s) URL with a host"
		}
		if problem != "" {
			if d.Member != "" {
				problem = "its " + d.Member + " " + problem
			}
			p.Add("config."+d.Field, "%s", problem)
		}
	}
	if p.Err() != nil {
		return events.ChannelConfig{}, nil
	}
	public, secret := entry.SplitSecrets(config)
	sealed := make(map[string]string, len(secret))
	for field, v := range secret {
		s, err := c.keys.Seal([]byte(v), events.ChannelSecretAAD(tenant, entry.ChannelKey, field))
		if err != nil {
			return events.ChannelConfig{}, fmt.Errorf("control: sealing %s: %w", field, err)
		}
		sealed[field] = s
	}
	return events.ChannelConfig{Public: public, Sealed: sealed}, nil
}

// unknownChannel does not quote the key: a request body's values are
// never echoed.
func unknownChannel() error {
	return apierr.Errorf(apierr.CodeUnknownChannel, "channelKey names no entry of the channel catalog (see GET /v1/channels/catalog)")
}

func channelNotFound(key string) error { return channelErr(projections.ErrNotFound, key) }

// channelErr is err of a read of channel key: channel_not_found when the
// channel does not exist.
func channelErr(err error, key string) error {
	return notFound(err, apierr.CodeChannelNotFound, "no channel %.64q is configured", key)
}

// RotateInboundToken gives one of the tenant's channels a new inbound
// generation: the inbound URLs shown before stop opening, and the
// channel's view shows a new one. It returns the channel as the
// projections hold it. Errors: apierr.ErrNotFound (channel_not_found).
func (c *Control) RotateInboundToken(ctx context.Context, tenant, channelKey string) (projections.Channel, error) {
	if _, known := delivery.LookupChannel(channelKey); !known {
		return projections.Channel{}, channelNotFound(channelKey)
	}
	gen, err := secrets.NewToken("", 22)
	if err != nil {
		return projections.Channel{}, err
	}
	subject := eventlog.Subject(tenant, eventlog.AggChannel, channelKey)
	err = c.appendIfFound(ctx, tenant, subject, events.ChannelInboundRotated,
		events.ChannelInboundRotatedData{ChannelKey: channelKey, Generation: gen},
		func() error {
			_, err := c.store.Channel(tenant, channelKey)
			return channelErr(err, channelKey)
		})
	if err != nil {
		return projections.Channel{}, err
	}
	return c.store.Channel(tenant, channelKey)
}
