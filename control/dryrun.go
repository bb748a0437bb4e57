package control

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/projections"
)

const (
	// DryRunSampleSize is how many recipients a dry run shows one by one.
	DryRunSampleSize = 20
	// dryRunTimeout bounds a dry run's work.
	dryRunTimeout = time.Minute
	// dryRunPage is how many subscriptions of a topic are read at once.
	dryRunPage = 1000
)

// dryRunKinds are the kinds a dry run may be asked about.
var dryRunKinds = []string{delivery.KindEmail, delivery.KindSMS, delivery.KindChat, delivery.KindPush,
	delivery.KindInApp, delivery.KindWebhook}

// DryRunResult is who a trigger would reach and what each kind's send
// would do for them, were it made now.
type DryRunResult struct {
	Recipients int
	ByKind     map[string]*DryRunCounts
	// Sample are the first recipients (DryRunSampleSize at most), in the
	// order the trigger resolves them, each with its outcome by kind.
	Sample []DryRunRecipient
}

// DryRunCounts count the outcomes of one kind's sends.
type DryRunCounts struct {
	Send int
	// Skipped, Held and Failed count by reason: Skipped by
	// preference, no_address and suppressed, Held by quiet_hours, Failed by
	// no_channel (the tenant has no enabled channel of the kind).
	Skipped map[string]int
	Held    map[string]int
	Failed  map[string]int
}

// DryRunRecipient is one recipient's outcome by kind: "send",
// "skipped:<reason>", "held:quiet_hours" or "failed:no_channel".
type DryRunRecipient struct {
	SubscriberID string
	Kinds        map[string]string
}

// DryRunTrigger answers what Trigger would do with cmd, without doing
// it: it resolves the audience as a trigger does (topics streamed, not
// loaded whole) and decides each kind's send to each recipient with the
// decision a send acts on (delivery.Decide). kinds are the kinds asked
// about; none: the kinds the workflow's default preferences declare,
// else every kind the tenant has an enabled channel of. Nothing is
// written and the Bridge is not called.
//
// Errors: those of Trigger's validation; a *apierr.ValidationError
// naming kinds[i] for an unknown kind.
func (c *Control) DryRunTrigger(ctx context.Context, tenant string, cmd TriggerCommand, kinds []string) (DryRunResult, error) {
	acc, err := cmd.validate()
	if err != nil {
		return DryRunResult{}, err
	}
	var p apierr.Problems
	for i, k := range kinds {
		if !slices.Contains(dryRunKinds, k) {
			p.Add(fmt.Sprintf("kinds[%d]", i), "must be one of %v", dryRunKinds)
		}
	}
	if err := p.Err(); err != nil {
		return DryRunResult{}, err
	}
	if err := c.bridgeConfigured(ctx, tenant); err != nil {
		return DryRunResult{}, err
	}
	if err := c.checkTriggerPayload(ctx, tenant, acc.WorkflowID, acc.Payload); err != nil {
		return DryRunResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, dryRunTimeout)
	defer cancel()
	if err := c.store.WaitCaughtUp(ctx, c.log); err != nil {
		return DryRunResult{}, err
	}
	if len(kinds) == 0 {
		if kinds, err = c.defaultKinds(tenant, acc.WorkflowID); err != nil {
			return DryRunResult{}, err
		}
	}
	kinds = slices.Compact(slices.Sorted(slices.Values(kinds)))
	res := DryRunResult{ByKind: map[string]*DryRunCounts{}, Sample: []DryRunRecipient{}}
	for _, k := range kinds {
		res.ByKind[k] = &DryRunCounts{Skipped: map[string]int{delivery.ReasonPreference: 0, delivery.ReasonNoAddress: 0,
			delivery.ReasonSuppressed: 0}, Held: map[string]int{delivery.ReasonQuietHours: 0}, Failed: map[string]int{}}
	}
	now := c.rtOpts.Now()
	visit := func(sub string) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: the dry run took longer than %s", apierr.ErrBusy, dryRunTimeout)
		}
		res.Recipients++
		var one *DryRunRecipient
		if len(res.Sample) < DryRunSampleSize {
			res.Sample = append(res.Sample, DryRunRecipient{SubscriberID: sub, Kinds: map[string]string{}})
			one = &res.Sample[len(res.Sample)-1]
		}
		for _, k := range kinds {
			d, err := delivery.Decide(ctx, c.store, delivery.Ask{Tenant: tenant, Workflow: acc.WorkflowID, Subscriber: sub, Kind: k, Now: now})
			if err != nil {
				return err
			}
			n, outcome := res.ByKind[k], d.Verdict()
			switch d.Verdict() {
			case delivery.VerdictSend:
				n.Send++
			case delivery.VerdictSkip:
				n.Skipped[d.Reason()]++
				outcome = "skipped:" + d.Reason()
			case delivery.VerdictHold:
				n.Held[d.Reason()]++
				outcome = "held:" + d.Reason()
			default:
				n.Failed[d.Reason()]++
				outcome = "failed:" + d.Reason()
			}
			if one != nil {
				one.Kinds[k] = outcome
			}
		}
		return nil
	}
	if acc.To.SubscriberID != nil {
		return res, visit(*acc.To.SubscriberID)
	}
	return res, c.eachTopicMember(tenant, acc.To.Topics, visit)
}

// defaultKinds are the kinds a dry run decides when none is asked: those
// the workflow's default preferences declare, else every kind the tenant
// has an enabled channel of.
func (c *Control) defaultKinds(tenant, workflow string) ([]string, error) {
	def, err := c.store.WorkflowDefaults(tenant, workflow)
	if err != nil {
		return nil, err
	}
	var kinds []string
	for k := range def.Channels {
		kinds = append(kinds, k)
	}
	if len(kinds) > 0 {
		return kinds, nil
	}
	chs, err := c.store.Channels(tenant)
	if err != nil {
		return nil, err
	}
	for _, ch := range chs {
		if ch.Enabled {
			kinds = append(kinds, ch.Kind)
		}
	}
	return kinds, nil
}

// eachTopicMember calls fn with every subscriber of topics once, in
// external id order (as the trigger's fan-out resolves them), reading
// each topic a page at a time: a merge of the topics' sorted members.
func (c *Control) eachTopicMember(tenant string, topics []string, fn func(string) error) error {
	topics = slices.Compact(slices.Sorted(slices.Values(topics)))
	type cursor struct {
		topic string
		page  []string
		next  string
		done  bool
	}
	fill := func(cur *cursor) error {
		for len(cur.page) == 0 && !cur.done {
			subs, next, err := c.store.TopicSubscribers(tenant, cur.topic, projections.Page{Limit: dryRunPage, Cursor: cur.next})
			if errors.Is(err, projections.ErrNotFound) {
				cur.done = true
				return nil
			}
			if err != nil {
				return err
			}
			for _, s := range subs {
				cur.page = append(cur.page, s.SubscriberID)
			}
			cur.next, cur.done = next, next == ""
		}
		return nil
	}
	curs := make([]*cursor, 0, len(topics))
	for _, t := range topics {
		cur := &cursor{topic: t}
		if err := fill(cur); err != nil {
			return err
		}
		curs = append(curs, cur)
	}
	last, started := "", false
	for {
		curs = slices.DeleteFunc(curs, func(cur *cursor) bool { return len(cur.page) == 0 })
		if len(curs) == 0 {
			return nil
		}
		sort.Slice(curs, func(i, j int) bool { return curs[i].page[0] < curs[j].page[0] })
		cur := curs[0]
		id := cur.page[0]
		cur.page = cur.page[1:]
		if err := fill(cur); err != nil {
			return err
		}
		if started && id == last {
			continue
		}
		last, started = id, true
		if err := fn(id); err != nil {
			return err
		}
	}
}
