package projections

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// inbox: tenant\x00subscriberId\x00<seq> → InAppMessage, seq being the
// stream sequence of its InAppMessageStored as 16 hex digits: a
// subscriber's messages in the order they were stored.
var bucketInbox = []byte("inbox")

// InAppMessage is the read model of one in-app message in a subscriber's
// inbox.
type InAppMessage struct {
	MessageID    string          `json:"messageId"`
	SubscriberID string          `json:"subscriberId"`
	WorkflowID   string          `json:"workflowId,omitempty"`
	RunID        string          `json:"runId"`
	StepID       string          `json:"stepId"`
	Content      json.RawMessage `json:"content"`
	CreatedAt    time.Time       `json:"createdAt"`
}

func inboxModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{events.InAppMessageStored: applyInAppMessageStored}, [][]byte{bucketInbox}
}

func applyInAppMessageStored(tx *bolt.Tx, ev eventlog.Event) error {
	var d events.InAppMessageStoredData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	return putJSON(appendBucket(tx, bucketInbox), key(ev.TenantID, d.SubscriberID+"\x00"+seqID(ev.Seq)), InAppMessage{
		MessageID: d.MessageID, SubscriberID: d.SubscriberID, WorkflowID: d.WorkflowID, RunID: d.RunID,
		StepID: d.StepID, Content: d.Content, CreatedAt: ev.At,
	})
}

// deletePrefix deletes every key of b that starts with prefix.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
