package projections

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// bucketWorkflowSchemas holds the payload schema of each workflow of a
// tenant's last sync that declared one: tenant\x00workflowId →
// WorkflowSchema. A trigger reads it, so it is a local read, not a round
// trip to the log.
var bucketWorkflowSchemas = []byte("workflow_schemas")

// WorkflowSchema is the payload schema a workflow declared at the
// tenant's last sync.
type WorkflowSchema struct {
	// Digest is the hex SHA-256 of Schema: the version of the schema, the
	// key under which a trigger's checker keeps it compiled.
	Digest string          `json:"digest"`
	Schema json.RawMessage `json:"schema"`
}

// applyWorkflowSchemas replaces the tenant's payload schemas with the
// sync's (WorkflowsSynced is applied by the preferences model, which calls
// it).
func applyWorkflowSchemas(tx *bolt.Tx, ev eventlog.Event, d events.WorkflowsSyncedData) error {
	b := tx.Bucket(bucketWorkflowSchemas)
	if err := deletePrefix(b, key(ev.TenantID, "")); err != nil {
		return err
	}
	for _, w := range d.Workflows {
		if len(w.PayloadSchema) == 0 || string(w.PayloadSchema) == "null" {
			continue
		}
		sum := sha256.Sum256(w.PayloadSchema)
		v := WorkflowSchema{Digest: hex.EncodeToString(sum[:]), Schema: w.PayloadSchema}
		if err := putJSON(b, key(ev.TenantID, w.WorkflowID), v); err != nil {
			return err
		}
	}
	return nil
}

// WorkflowSchema returns the payload schema workflow declared at the
// tenant's last sync; false when it declared none (or was not synced).
func (s *Store) WorkflowSchema(tenant, workflow string) (WorkflowSchema, bool, error) {
	var v WorkflowSchema
	var ok bool
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		ok, err = getJSON(tx.Bucket(bucketWorkflowSchemas), key(tenant, workflow), &v)
		return err
	})
	return v, ok, err
}
