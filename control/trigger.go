package control

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// Limits of a trigger.
const (
	// MaxTopics bounds the topics one trigger names.
	MaxTopics = 100
	// MaxTxnIDChars bounds a transactionId, in characters.
	MaxTxnIDChars = 128
	// MaxWorkflowIDChars bounds a workflow id (it ends up in subjects).
	MaxWorkflowIDChars = 128
	// BroadcastThreshold is the default of RuntimeOptions.BroadcastThreshold:
	// the largest audience a trigger is answered with its runs; a larger one
	// is answered once it is accepted, with the count of its recipients,
	// and fanned out in the background.
	BroadcastThreshold = 1000
)

// TriggerCommand starts a workflow for a target. A nil field was not
// given.
type TriggerCommand struct {
	WorkflowID string
	// To must hold exactly one of SubscriberID and Topics.
	To *TriggerTarget
	// Payload is raw JSON: an object, or absent or null for {}.
	Payload json.RawMessage
	// TransactionID, when given, makes the trigger idempotent; when nil
	// one is drawn.
	TransactionID *string
}

// TriggerTarget is a trigger's target: exactly one of SubscriberID and
// Topics.
type TriggerTarget struct {
	SubscriberID *string
	Topics       *[]string
}

// TriggerResult is the answer to a trigger: its transaction and the run
// of each recipient, in the order they were resolved.
type TriggerResult struct {
	TransactionID string
	Runs          []RunRef
	// Recipients is set, and Runs nil, for a broadcast (an audience over
	// BroadcastThreshold): the count of its recipients at acceptance.
	Recipients *int
}

// RunRef is one run a trigger started, or failed to start (Status
// "failed", RunID empty).
type RunRef struct {
	RunID        string
	SubscriberID string
	// Status is "dispatched" or "failed".
	Status string
}

// ValidTransactionID reports whether id is a valid transactionId: 1 to
// MaxTxnIDChars printable characters (apierr.ValidID).
func ValidTransactionID(id string) bool { return apierr.ValidID(id, MaxTxnIDChars) }

// ValidWorkflowID reports whether id is a workflow id a trigger accepts:
// the Bridge's rule, at most MaxWorkflowIDChars.
func ValidWorkflowID(id string) bool {
	return wire.ValidWorkflowID(id) && len(id) <= MaxWorkflowIDChars
}

// errTransactionMismatch refuses a transactionId repeated with another
// request.
var errTransactionMismatch = apierr.New(apierr.CodeTransactionMismatch,
	"this transactionId was used with another request (workflow, target or payload)")

// errBridgeRequired refuses a command that needs the tenant's Bridge
// before the tenant registered one.
var errBridgeRequired = apierr.New(apierr.CodeBridgeNotConfigured,
	"no Bridge is registered: PUT /v1/bridge first")

// Trigger starts one run per resolved recipient and answers once the
// fan-out is finished: the runtime is armed (Runtime.Arm), the trigger
// accepted (TriggerAccepted, its transaction's subject expected empty),
// then fanned out (Runtime.FanOut); a crash after the acceptance is
// finished by the runtime. A broadcast (topics whose distinct subscribers
// number more than BroadcastThreshold, counted without loading them) is
// answered once accepted, with its count and no runs: its fan-out is
// handed to the runtime (Runtime.Broadcast). A repeated transaction id answers the first
// trigger's runs and starts nothing new; repeated with another request it
// is refused (409 transaction_mismatch).
//
// Errors: a *apierr.ValidationError naming each bad field (its code
// invalid_payload when the payload breaks the workflow's payloadSchema);
// 409 bridge_not_configured before the tenant registered a Bridge.
func (c *Control) Trigger(ctx context.Context, tenant string, cmd TriggerCommand) (TriggerResult, error) {
	acc, err := cmd.validate()
	if err != nil {
		return TriggerResult{}, err
	}
	if err := c.bridgeConfigured(ctx, tenant); err != nil {
		return TriggerResult{}, err
	}
	// A payload the workflow's schema refuses starts nothing: checked
	// before anything is armed or appended.
	// A repeat of a trigger accepted before the schema changed still
	// answers the first trigger's runs.
	if err := c.checkTriggerPayload(ctx, tenant, acc.WorkflowID, acc.Payload); err != nil {
		if same, ferr := c.acceptedBefore(ctx, tenant, acc); ferr != nil || !same {
			return TriggerResult{}, err
		}
	}
	// A topic trigger's audience is counted (not loaded): over the
	// threshold, the trigger is a broadcast, answered once accepted.
	if acc.To.Topics != nil {
		if err := c.store.WaitCaughtUp(ctx, c.log); err != nil {
			return TriggerResult{}, err
		}
		n, err := c.store.CountAudience(tenant, acc.To.Topics, c.rtOpts.BroadcastThreshold)
		if err != nil {
			return TriggerResult{}, err
		}
		if n > c.rtOpts.BroadcastThreshold {
			acc.Recipients = &n
		}
	}
	// The runtime readies the trigger's completion before it is accepted
	// (for one subscriber: the run's first work message; see the engine's
	// single.go for where a crash between the writes leaves a trigger).
	accept, release, err := c.rt.Arm(ctx, tenant, acc)
	if err != nil {
		return TriggerResult{}, err
	}
	defer release()
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID)
	_, err = c.log.Append(accept, eventlog.Record{Subject: subject, Type: events.TriggerAccepted, Tenant: tenant,
		Data: acc, Expect: true})
	if err == nil && acc.Recipients != nil {
		if err := c.rt.Broadcast(ctx, tenant, acc); err != nil {
			return TriggerResult{}, err
		}
		return TriggerResult{TransactionID: acc.TransactionID, Recipients: acc.Recipients}, nil
	}
	if errors.Is(err, eventlog.ErrConflict) {
		// The transaction exists: finish its fan-out if it is not finished
		// (idempotent), and answer its runs.
		first, ok, ferr := c.log.First(ctx, subject)
		// The conflict says the transaction is stored; on a replicated
		// stream whose leader was just elected, or while the first write
		// is still in flight, it may not be readable yet: a busy answer
		// (503, repeat with the same transactionId), never a 500.
		for try := 0; ferr == nil && !ok && try < 10; try++ {
			select {
			case <-ctx.Done():
				return TriggerResult{}, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			first, ok, ferr = c.log.First(ctx, subject)
		}
		if ferr != nil {
			return TriggerResult{}, ferr
		}
		if !ok {
			return TriggerResult{}, fmt.Errorf("%w: the transaction is being stored", apierr.ErrBusy)
		}
		var accepted events.TriggerAcceptedData
		if err := first.Decode(&accepted); err != nil {
			return TriggerResult{}, err
		}
		// The same id with another request: refused, never answered
		// with the first request's runs.
		if same, err := sameRequest(accepted, acc); err != nil {
			return TriggerResult{}, err
		} else if !same {
			return TriggerResult{}, errTransactionMismatch
		}
		acc = accepted
		if acc.Recipients != nil {
			// A broadcast: its fan-out is the runtime's (handed over
			// after its acceptance, or by the backstop Arm stored).
			return TriggerResult{TransactionID: acc.TransactionID, Recipients: acc.Recipients}, nil
		}
	} else if err != nil {
		return TriggerResult{}, err
	}
	dispatched, err := c.rt.FanOut(ctx, tenant, acc)
	if err != nil {
		return TriggerResult{}, err
	}
	res := TriggerResult{TransactionID: acc.TransactionID, Runs: make([]RunRef, len(dispatched))}
	for i, d := range dispatched {
		res.Runs[i] = RunRef{RunID: d.RunID, SubscriberID: d.SubscriberID, Status: d.Status}
	}
	return res, nil
}

// validate checks a trigger and returns it as accepted.
func (cmd TriggerCommand) validate() (events.TriggerAcceptedData, error) {
	var p apierr.Problems
	var acc events.TriggerAcceptedData
	if cmd.WorkflowID == "" {
		p.Add("workflowId", "is required")
	} else if !wire.ValidWorkflowID(cmd.WorkflowID) || len(cmd.WorkflowID) > MaxWorkflowIDChars {
		p.Add("workflowId", "must match ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$ and be at most %d characters", MaxWorkflowIDChars)
	}
	switch to := cmd.To; {
	case to == nil:
		p.Add("to", "is required: give exactly one of subscriberId and topics")
	case (to.SubscriberID == nil) == (to.Topics == nil):
		p.Add("to", "must have exactly one of subscriberId and topics")
	case to.SubscriberID != nil:
		if !ValidExternalID(*to.SubscriberID) {
			p.Add("to.subscriberId", "must be 1 to %d printable characters", MaxExternalIDChars)
		}
		acc.To.SubscriberID = to.SubscriberID
	default:
		topics := *to.Topics
		if len(topics) == 0 {
			p.Add("to.topics", "must name at least one topic")
		}
		if len(topics) > MaxTopics {
			p.Add("to.topics", "must name at most %d topics", MaxTopics)
		}
		for i, k := range topics {
			if !ValidTopicKey(k) {
				p.Add(fmt.Sprintf("to.topics[%d]", i), "must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", MaxTopicKeyChars)
			}
		}
		acc.To.Topics = topics
	}
	// A trigger without a payload carries {}: every run sees an object.
	acc.Payload = payloadObject("payload", cmd.Payload, &p)
	if acc.Payload == nil {
		acc.Payload = json.RawMessage("{}")
	}
	if cmd.TransactionID != nil {
		if !ValidTransactionID(*cmd.TransactionID) {
			p.Add("transactionId", "must be 1 to %d printable characters", MaxTxnIDChars)
		}
		acc.TransactionID = *cmd.TransactionID
	} else {
		acc.TransactionID = eventlog.NewID("txn_")
	}
	acc.WorkflowID = cmd.WorkflowID
	if err := p.Err(); err != nil {
		return acc, err
	}
	if cmd.TransactionID != nil {
		// Only a caller that names its transaction can repeat it before
		// the answer gives it the id. A trigger whose id Herald made has
		// no digest: a repeat of that id is compared on the digest
		// computed then (sameRequest), as an event written before digests
		// were stored is. The canonical payload costs about 1% of a
		// single trigger's CPU.
		digest, err := requestDigest(acc)
		if err != nil {
			return acc, err
		}
		acc.RequestDigest = digest
	}
	return acc, nil
}

// requestDigest returns the hex SHA-256 of a trigger's canonical request:
// its workflow id, its target (a subscriber id, or topics in the order
// given) and its payload re-encoded with sorted keys (numbers kept as
// written), so that the same request spelled with its keys in another
// order or other spacing is the same request.
func requestDigest(acc events.TriggerAcceptedData) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(acc.Payload))
	dec.UseNumber()
	var payload any
	if err := dec.Decode(&payload); err != nil {
		return "", fmt.Errorf("control: canonical payload: %w", err)
	}
	canonical, err := json.Marshal(struct {
		WorkflowID string        `json:"workflowId"`
		To         events.Target `json:"to"`
		Payload    any           `json:"payload"`
	}{acc.WorkflowID, acc.To, payload})
	if err != nil {
		return "", fmt.Errorf("control: canonical request: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// sameRequest reports whether a repeat of a transaction id carries the
// request the transaction was accepted with. A side without a stored
// digest is compared on its digest computed now.
func sameRequest(first, repeat events.TriggerAcceptedData) (bool, error) {
	digest := func(a events.TriggerAcceptedData) (string, error) {
		if a.RequestDigest != "" {
			return a.RequestDigest, nil
		}
		return requestDigest(a)
	}
	want, err := digest(first)
	if err != nil {
		return false, err
	}
	got, err := digest(repeat)
	return want == got, err
}

// bridgeConfigured checks the tenant registered a Bridge. A miss in the
// local projections is checked again once they caught up with the stream,
// so a registration made through another process a moment ago counts.
func (c *Control) bridgeConfigured(ctx context.Context, tenant string) error {
	_, err := c.store.Bridge(tenant)
	if errors.Is(err, projections.ErrNotFound) {
		if err := c.store.WaitCaughtUp(ctx, c.log); err != nil {
			return err
		}
		_, err = c.store.Bridge(tenant)
	}
	if errors.Is(err, projections.ErrNotFound) {
		return errBridgeRequired
	}
	return err
}

// acceptedBefore reports whether acc's transaction was accepted already
// with the same request.
func (c *Control) acceptedBefore(ctx context.Context, tenant string, acc events.TriggerAcceptedData) (bool, error) {
	first, ok, err := c.log.First(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID))
	if err != nil || !ok {
		return false, err
	}
	var accepted events.TriggerAcceptedData
	if err := first.Decode(&accepted); err != nil {
		return false, err
	}
	return sameRequest(accepted, acc)
}
