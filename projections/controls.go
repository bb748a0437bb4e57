package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// The step controls read models: the control schemas of the tenant's last
// sync, the current values of each (workflow, step, locale), and every
// version of a workflow's controls.
var (
	bucketControlSchemas = []byte("control_schemas") // tenant\x00workflow → map step → schema
	bucketControlValues  = []byte("control_values")  // tenant\x00workflow\x00step\x00locale → ControlValues
	bucketControlHistory = []byte("control_history") // tenant\x00workflow\x00<version, 8 bytes big-endian> → ControlVersion
)

// ControlVersion is one change of a workflow's controls: the values of a
// step in a locale after it (nil: deleted).
type ControlVersion struct {
	StepID       string          `json:"stepId"`
	Locale       string          `json:"locale"`
	Values       json.RawMessage `json:"values"`
	Version      int             `json:"version"`
	RevertedFrom int             `json:"revertedFrom,omitempty"`
	Actor        string          `json:"actor"`
	At           time.Time       `json:"at"`
}

func controlModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
		events.ControlsChanged: decoded(applyControlsChanged),
	}, [][]byte{bucketControlSchemas, bucketControlValues, bucketControlHistory}
}

// applyControlSchemas replaces the tenant's control schemas with the
// sync's (called with the other models of WorkflowsSynced).
func applyControlSchemas(tx *bolt.Tx, ev eventlog.Event, d events.WorkflowsSyncedData) error {
	b := tx.Bucket(bucketControlSchemas)
	if err := deletePrefix(b, key(ev.TenantID, "")); err != nil {
		return err
	}
	for _, w := range d.Workflows {
		if len(w.Controls) == 0 {
			continue
		}
		if err := putJSON(b, key(ev.TenantID, w.WorkflowID), w.Controls); err != nil {
			return err
		}
	}
	return nil
}

func controlValuesKey(tenant, workflow, step, locale string) []byte {
	return key(tenant, workflow+"\x00"+step+"\x00"+locale)
}

func controlHistoryKey(tenant, workflow string, version int) []byte {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(version))
	return append(key(tenant, workflow+"\x00"), v[:]...)
}

func applyControlsChanged(tx *bolt.Tx, ev eventlog.Event, d events.ControlsChangedData) error {
	v := ControlVersion{StepID: d.StepID, Locale: d.Locale, Version: d.Version, RevertedFrom: d.RevertedFrom,
		Actor: d.Actor, At: ev.At}
	if len(d.Values) > 0 && string(d.Values) != "null" {
		v.Values = d.Values
	}
	if err := putJSON(tx.Bucket(bucketControlHistory), controlHistoryKey(ev.TenantID, d.WorkflowID, d.Version), v); err != nil {
		return err
	}
	k := controlValuesKey(ev.TenantID, d.WorkflowID, d.StepID, d.Locale)
	if v.Values == nil {
		return tx.Bucket(bucketControlValues).Delete(k)
	}
	return putJSON(tx.Bucket(bucketControlValues), k, v)
}

// ControlSchemas returns the control schemas workflow declared at the
// tenant's last sync, by step id; nil when none.
func (s *Store) ControlSchemas(tenant, workflow string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := s.view(func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bucketControlSchemas), key(tenant, workflow), &m)
		return err
	})
	return m, err
}

// ControlValues returns the current values of workflow's controls: each
// (step, locale) that has some, by step id and locale.
func (s *Store) ControlValues(tenant, workflow string) ([]ControlVersion, error) {
	return s.controlVersions(bucketControlValues, tenant, workflow)
}

// ControlHistory returns the versions of workflow's controls, newest
// first.
func (s *Store) ControlHistory(tenant, workflow string) ([]ControlVersion, error) {
	out, err := s.controlVersions(bucketControlHistory, tenant, workflow)
	slices.Reverse(out)
	return out, err
}

// controlVersions reads workflow's rows of bucket in key order.
func (s *Store) controlVersions(bucket []byte, tenant, workflow string) ([]ControlVersion, error) {
	var out []ControlVersion
	prefix := key(tenant, workflow+"\x00")
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, data := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, data = c.Next() {
			var v ControlVersion
			if err := json.Unmarshal(data, &v); err != nil {
				return err
			}
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// ControlsVersion returns the last version of workflow's controls; 0
// before the first change.
func (s *Store) ControlsVersion(tenant, workflow string) (int, error) {
	var version int
	prefix := key(tenant, workflow+"\x00")
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketControlHistory).Cursor()
		// The last key of the prefix: seek past it and step back.
		next := append(bytes.Clone(prefix[:len(prefix)-1]), 1)
		k, data := c.Seek(next)
		if k == nil {
			k, data = c.Last()
		} else {
			k, data = c.Prev()
		}
		if k == nil || !bytes.HasPrefix(k, prefix) {
			return nil
		}
		var v ControlVersion
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		version = v.Version
		return nil
	})
	return version, err
}
