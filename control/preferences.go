package control

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/preferences"
	"github.com/heraldhq/herald/projections"
)

// checkWorkflowPreferences copies what a discovered workflow declares
// about preferences into sw, and returns the problems of its default
// preferences (unknown kinds), named under field.
func checkWorkflowPreferences(sw *events.SyncedWorkflow, field string, w wire.WorkflowInfo) apierr.Problems {
	sw.Critical = w.Critical
	if w.Preferences == nil || len(w.Preferences.Channels) == 0 {
		return nil
	}
	if p := preferences.ParseDefaults(field+".preferences.channels", w.Preferences.Channels); len(p) > 0 {
		return p
	}
	sw.Preferences = &events.WorkflowPreferences{Channels: maps.Clone(w.Preferences.Channels)}
	return nil
}

// Preferences returns a subscriber's preferences (CONTRACT §11): only
// what was set. Errors: apierr.ErrNotFound (subscriber_not_found),
// *apierr.ValidationError.
func (c *Control) Preferences(tenant, externalID string) (preferences.Doc, error) {
	if _, err := c.Subscriber(tenant, externalID); err != nil {
		return preferences.Doc{}, err
	}
	doc, err := c.store.Preferences(tenant, externalID)
	return doc.Clone(), err
}

// PatchPreferences merges body (a PATCH body of CONTRACT §11, see
// preferences.Patch) into a subscriber's preferences, records the result
// with actor (an API key's prefix, or events.ActorPublicPage) and returns
// it. A patch that changes nothing appends no event. Errors:
// apierr.ErrNotFound (subscriber_not_found), *apierr.ValidationError
// naming each bad field, apierr.ErrBusy.
func (c *Control) PatchPreferences(ctx context.Context, tenant, externalID string, body json.RawMessage, actor string) (preferences.Doc, error) {
	if err := externalIDErr("externalId", externalID); err != nil {
		return preferences.Doc{}, err
	}
	// The shape is checked before the subscriber is looked for: a bad body
	// is a 422 whoever it names.
	if _, pp := preferences.Patch(preferences.Doc{}, body); len(pp) > 0 {
		return preferences.Doc{}, pp.Err()
	}
	subject := eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)
	var out preferences.Doc
	err := c.update(ctx, subject, func(seq uint64) error {
		if _, err := c.store.Subscriber(tenant, externalID); err != nil {
			return subscriberErr(err, externalID)
		}
		cur, err := c.store.Preferences(tenant, externalID)
		if err != nil {
			return err
		}
		next, pp := preferences.Patch(cur, body)
		if err := pp.Err(); err != nil {
			return err
		}
		out = next
		if preferences.Equal(cur, next) {
			return nil
		}
		data, err := json.Marshal(next)
		if err != nil {
			return err
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.SubscriberPreferencesUpdated, Tenant: tenant,
			Data:   events.SubscriberPreferencesUpdatedData{SubscriberID: externalID, Preferences: data, Actor: actor},
			Expect: true, ExpectSeq: seq})
		return err
	})
	return out, err
}

// PreferenceWorkflow is one workflow of the tenant's last sync as the
// preference page lists it.
type PreferenceWorkflow = projections.WorkflowDefaults

// PreferenceWorkflows lists the workflows of the tenant's last sync with
// what each declares about preferences, in workflow id order.
func (c *Control) PreferenceWorkflows(tenant string) ([]PreferenceWorkflow, error) {
	return c.store.TenantWorkflowDefaults(tenant)
}
