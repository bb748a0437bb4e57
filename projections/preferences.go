package projections

import (
	"bytes"
	"encoding/json"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/preferences"
	bolt "go.etcd.io/bbolt"
)

// The preference read models: a subscriber's preferences, and what each
// workflow of a tenant's last sync declares about them.
var (
	bucketPreferences      = []byte("preferences")       // tenant\x00externalId → preferences.Doc
	bucketWorkflowDefaults = []byte("workflow_defaults") // tenant\x00workflowId → WorkflowDefaults
)

// WorkflowDefaults is one workflow of a tenant's last sync as preferences
// see it.
type WorkflowDefaults struct {
	WorkflowID string `json:"workflowId"`
	// Name and Description are the workflow's display text (empty: none).
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	preferences.Defaults
}

func preferenceModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
		events.SubscriberPreferencesUpdated: decoded(applyPreferencesUpdated),
		events.WorkflowsSynced:              decoded(applyWorkflowsSynced),
	}, [][]byte{bucketPreferences, bucketWorkflowDefaults, bucketWorkflowSchemas}
}

// applyPreferencesUpdated stores the subscriber's preferences and moves
// the subscriber's Seq (its subject's last event). It is ignored when the
// subscriber does not exist (the writer checked it did).
func applyPreferencesUpdated(tx *bolt.Tx, ev eventlog.Event, d events.SubscriberPreferencesUpdatedData) error {
	subs := tx.Bucket(bucketSubscribers)
	k := key(ev.TenantID, d.SubscriberID)
	var sub Subscriber
	if ok, err := getJSON(subs, k, &sub); err != nil || !ok {
		return err
	}
	sub.Seq = ev.Seq
	if err := putJSON(subs, k, sub); err != nil {
		return err
	}
	var doc preferences.Doc
	if err := json.Unmarshal(d.Preferences, &doc); err != nil {
		return err
	}
	if doc.Empty() {
		return tx.Bucket(bucketPreferences).Delete(k)
	}
	return putJSON(tx.Bucket(bucketPreferences), k, doc)
}

// deletePreferences drops a deleted (or erased) subscriber's preferences.
func deletePreferences(tx *bolt.Tx, tenant, externalID string) error {
	return tx.Bucket(bucketPreferences).Delete(key(tenant, externalID))
}

// applyWorkflowsSynced replaces the tenant's workflow defaults and payload
// schemas with the sync's.
func applyWorkflowsSynced(tx *bolt.Tx, ev eventlog.Event, d events.WorkflowsSyncedData) error {
	if err := applyWorkflowSchemas(tx, ev, d); err != nil {
		return err
	}
	if err := applyControlSchemas(tx, ev, d); err != nil {
		return err
	}
	b := tx.Bucket(bucketWorkflowDefaults)
	if err := deletePrefix(b, key(ev.TenantID, "")); err != nil {
		return err
	}
	for _, w := range d.Workflows {
		v := WorkflowDefaults{WorkflowID: w.WorkflowID, Name: w.Name, Description: w.Description,
			Defaults: preferences.Defaults{Critical: w.Critical}}
		if w.Preferences != nil {
			v.Channels = w.Preferences.Channels
		}
		if err := putJSON(b, key(ev.TenantID, w.WorkflowID), v); err != nil {
			return err
		}
	}
	return nil
}

// Preferences returns a subscriber's preferences: the zero Doc when it
// set none. It does not check that the subscriber exists.
func (s *Store) Preferences(tenant, externalID string) (preferences.Doc, error) {
	var doc preferences.Doc
	err := s.view(func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bucketPreferences), key(tenant, externalID), &doc)
		return err
	})
	return doc, err
}

// WorkflowDefaults returns what workflow declared at the tenant's last
// sync; the zero value (not critical, no defaults) for a workflow not
// synced.
func (s *Store) WorkflowDefaults(tenant, workflow string) (preferences.Defaults, error) {
	var v WorkflowDefaults
	err := s.view(func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bucketWorkflowDefaults), key(tenant, workflow), &v)
		return err
	})
	return v.Defaults, err
}

// TenantWorkflowDefaults lists the workflows of the tenant's last sync in
// workflow id order (at most as many as a sync records).
func (s *Store) TenantWorkflowDefaults(tenant string) ([]WorkflowDefaults, error) {
	var out []WorkflowDefaults
	err := s.view(func(tx *bolt.Tx) error {
		prefix := key(tenant, "")
		c := tx.Bucket(bucketWorkflowDefaults).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var w WorkflowDefaults
			if err := json.Unmarshal(v, &w); err != nil {
				return err
			}
			out = append(out, w)
		}
		return nil
	})
	return out, err
}
