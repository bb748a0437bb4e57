package projections

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"slices"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
	bolt "go.etcd.io/bbolt"
)

// The overview's figures: counters kept by the projector in buckets of
// time, a bucket per tenant, resolution and start, so reading a window is
// reading its buckets, never a scan of runs. Each counted event adds to
// its bucket at all three resolutions; buckets older than a resolution
// keeps are dropped as newer ones are written (by the events' own times,
// so a rebuild keeps the same).

var bucketStats = []byte("stats") // tenant\x00<resolution><start, 8 bytes> → StatsBucket

// Resolution is the length of a stats bucket and how long such buckets
// are kept.
type Resolution struct {
	ID   byte
	Step time.Duration
	Keep time.Duration
}

// The resolutions: a minute for the last hour, a quarter hour for a day,
// an hour for a week.
var (
	ByMinute  = Resolution{'m', time.Minute, 2 * time.Hour}
	ByQuarter = Resolution{'q', 15 * time.Minute, 2 * 24 * time.Hour}
	ByHour    = Resolution{'h', time.Hour, 8 * 24 * time.Hour}
)

var resolutions = []Resolution{ByMinute, ByQuarter, ByHour}

// LatencyBoundsMs are the upper bounds of the trigger → first send
// latency histogram, in milliseconds; a last slot counts the rest.
var LatencyBoundsMs = []int64{10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 900000, 3600000}

// StatsBucket is what happened in one bucket of time.
type StatsBucket struct {
	RunsStarted   int `json:"runsStarted,omitempty"`
	RunsCompleted int `json:"runsCompleted,omitempty"`
	RunsFailed    int `json:"runsFailed,omitempty"`
	RunsCancelled int `json:"runsCancelled,omitempty"`
	// Deliveries counts outcomes (sent, delivered, bounced, complained,
	// failed, skipped) by channel kind.
	Deliveries map[string]map[string]int `json:"deliveries,omitempty"`
	// Failed counts failed runs by workflow.
	Failed map[string]int `json:"failed,omitempty"`
	// Latency counts runs' trigger → first send times, a slot a bound of
	// LatencyBoundsMs and one more for the rest.
	Latency []int `json:"latency,omitempty"`
}

// Add adds o's counts to b.
func (b *StatsBucket) Add(o StatsBucket) {
	b.RunsStarted += o.RunsStarted
	b.RunsCompleted += o.RunsCompleted
	b.RunsFailed += o.RunsFailed
	b.RunsCancelled += o.RunsCancelled
	for kind, outcomes := range o.Deliveries {
		for outcome, n := range outcomes {
			b.count(kind, outcome, n)
		}
	}
	for w, n := range o.Failed {
		if b.Failed == nil {
			b.Failed = map[string]int{}
		}
		b.Failed[w] += n
	}
	for i, n := range o.Latency {
		b.latency(i, n)
	}
}

func (b *StatsBucket) count(kind, outcome string, n int) {
	if b.Deliveries == nil {
		b.Deliveries = map[string]map[string]int{}
	}
	if b.Deliveries[kind] == nil {
		b.Deliveries[kind] = map[string]int{}
	}
	b.Deliveries[kind][outcome] += n
}

func (b *StatsBucket) latency(slot, n int) {
	for len(b.Latency) <= slot {
		b.Latency = append(b.Latency, 0)
	}
	b.Latency[slot] += n
}

// LatencyQuantile is the upper bound, in milliseconds, of the slot that
// holds the q-th quantile of b's latencies (q in (0, 1]); -1 when there
// are none, and the last bound when it lies beyond them.
func (b *StatsBucket) LatencyQuantile(q float64) int64 {
	total := 0
	for _, n := range b.Latency {
		total += n
	}
	if total == 0 {
		return -1
	}
	need := int(float64(total)*q + 0.999999)
	seen := 0
	for i, n := range b.Latency {
		seen += n
		if seen >= need {
			return LatencyBoundsMs[min(i, len(LatencyBoundsMs)-1)]
		}
	}
	return LatencyBoundsMs[len(LatencyBoundsMs)-1]
}

// TopFailing lists the n workflows with most failed runs, most first
// (ties by id).
func (b *StatsBucket) TopFailing(n int) []WorkflowFailures {
	out := make([]WorkflowFailures, 0, len(b.Failed))
	for w, c := range b.Failed {
		out = append(out, WorkflowFailures{WorkflowID: w, Failed: c})
	}
	slices.SortFunc(out, func(a, b WorkflowFailures) int {
		return cmp.Or(cmp.Compare(b.Failed, a.Failed), cmp.Compare(a.WorkflowID, b.WorkflowID))
	})
	return out[:min(n, len(out))]
}

// WorkflowFailures is a workflow's count of failed runs.
type WorkflowFailures struct {
	WorkflowID string `json:"workflowId"`
	Failed     int    `json:"failed"`
}

func statsKey(tenant string, r Resolution, start time.Time) []byte {
	k := key(tenant, string([]byte{r.ID}))
	return binary.BigEndian.AppendUint64(k, uint64(start.Unix()))
}

// addStats adds d to the batch's additions to the buckets of at, at
// every resolution; flushStats writes them.
func (f *runFold) addStats(tenant string, at time.Time, d StatsBucket) {
	if f.stats == nil {
		f.stats = make(map[string]*StatsBucket)
		f.statsLatest = make(map[string]statsMark)
	}
	for _, r := range resolutions {
		start := at.UTC().Truncate(r.Step)
		k := string(statsKey(tenant, r, start))
		cur := f.stats[k]
		if cur == nil {
			cur = &StatsBucket{}
			f.stats[k] = cur
		}
		cur.Add(d)
		prefix := string(key(tenant, string([]byte{r.ID})))
		if m, ok := f.statsLatest[prefix]; !ok || start.After(m.start) {
			f.statsLatest[prefix] = statsMark{r, start}
		}
	}
}

// flushStats adds the batch's counts to their buckets, a read and a write
// a bucket however many events the batch counted in it, then drops the
// buckets each resolution keeps no more (by the latest bucket the batch
// counted in: events come in time order, so that is what counting them one
// by one would have dropped).
func (f *runFold) flushStats(tx *bolt.Tx) error {
	b := tx.Bucket(bucketStats)
	for k, d := range f.stats {
		var cur StatsBucket
		if _, err := getJSON(b, []byte(k), &cur); err != nil {
			return err
		}
		cur.Add(*d)
		if err := putJSON(b, []byte(k), cur); err != nil {
			return err
		}
	}
	for prefix, m := range f.statsLatest {
		cutoff := binary.BigEndian.AppendUint64([]byte(prefix), uint64(m.start.Add(-m.r.Keep).Unix()))
		p := []byte(prefix)
		c := b.Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && bytes.Compare(k, cutoff) < 0; k, _ = c.Seek(p) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
	}
	return nil
}

// statsMark is the latest bucket start a batch counted in, at a
// resolution.
type statsMark struct {
	r     Resolution
	start time.Time
}

// countStats counts ev in the stats, if it is a run's start or end or a
// delivery's outcome; runs are the batch's run states (a run started in
// the same batch is not in its row yet).
func countStats(tx *bolt.Tx, ev eventlog.Event, runs *runFold) error {
	var d StatsBucket
	switch ev.Type {
	case events.RunStarted:
		d.RunsStarted = 1
	case events.RunCompleted:
		d.RunsCompleted = 1
	case events.RunCancelled:
		d.RunsCancelled = 1
	case events.RunFailed:
		d.RunsFailed = 1
		_, _, runID, err := eventlog.ParseSubject(ev.Subject)
		if err != nil {
			return err
		}
		if st, err := runs.state(tx, ev.TenantID, runID); err != nil {
			return err
		} else if st != nil && st.WorkflowID != "" {
			d.Failed = map[string]int{st.WorkflowID: 1}
		}
	case events.DeliverySent, events.DeliveryFailed, events.DeliverySkipped, events.DeliveryReported:
		var a struct {
			AttemptID string `json:"attemptId"`
			Status    string `json:"status"`
		}
		if err := ev.Decode(&a); err != nil {
			return err
		}
		id, row, ok, err := deliveryRow(tx, ev.TenantID, a.AttemptID)
		if err != nil || !ok {
			return err
		}
		outcome := map[string]string{events.DeliverySent: DeliverySent, events.DeliveryFailed: DeliveryFailed,
			events.DeliverySkipped: DeliverySkipped}[ev.Type]
		if ev.Type == events.DeliveryReported {
			if a.Status != events.ReportDelivered && a.Status != events.ReportBounced && a.Status != events.ReportComplained {
				return nil // opens, clicks and a provider's late failure are not outcomes here
			}
			outcome = a.Status
		}
		d.count(row.Kind, outcome, 1)
		if ev.Type == events.DeliverySent {
			if err := firstSend(tx, ev, id, row, runs, &d); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	runs.addStats(ev.TenantID, ev.At, d)
	return nil
}

// firstSend counts the run's trigger → send latency in d when row (its
// ledger id id) is the run's first attempt sent.
func firstSend(tx *bolt.Tx, ev eventlog.Event, id string, row Delivery, runs *runFold, d *StatsBucket) error {
	all := tx.Bucket(bucketDeliveries)
	prefix := runDeliveries(tx, ev.TenantID, row.RunID)
	c := tx.Bucket(bucketDeliveriesByRun).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if string(k[len(prefix):]) == id {
			continue // row itself, read already
		}
		var other Delivery
		if _, err := getDelivery(all, key(ev.TenantID, string(k[len(prefix):])), &other); err != nil {
			return err
		}
		if other.AttemptID != row.AttemptID && other.Status != DeliveryPending && other.Status != DeliveryFailed &&
			other.Status != DeliverySkipped {
			return nil // an earlier send of the run
		}
	}
	st, err := runs.state(tx, ev.TenantID, row.RunID)
	if err != nil || st == nil || st.CreatedAt.IsZero() {
		return err
	}
	ms := ev.At.Sub(st.CreatedAt).Milliseconds()
	slot, _ := slices.BinarySearch(LatencyBoundsMs, ms)
	d.latency(slot, 1)
	return nil
}

// deliveryRow is the row of the attempt and its ledger id, if there is one.
func deliveryRow(tx *bolt.Tx, tenant, attemptID string) (string, Delivery, bool, error) {
	var row Delivery
	id := tx.Bucket(bucketDeliveryAttempts).Get(key(tenant, attemptID))
	if id == nil {
		return "", row, false, nil
	}
	ok, err := getDelivery(tx.Bucket(bucketDeliveries), key(tenant, string(id)), &row)
	return string(id), row, ok, err
}

// state is the run's state as the batch has it: folded in the batch, in
// the cache, or in its row; nil when unknown.
func (f *runFold) state(tx *bolt.Tx, tenant, runID string) (*runstate.State, error) {
	k := string(key(tenant, runID))
	if s, ok := f.states[k]; ok {
		return s, nil
	}
	if s, _ := f.cache.get(k); s != nil {
		return s, nil
	}
	var s runstate.State
	ok, err := getRun(tx, tenant, runID, &s)
	if err != nil || !ok {
		return nil, err
	}
	return &s, nil
}

// Stats sums a tenant's buckets of resolution r from from (inclusive) to
// to (exclusive), and returns each bucket of the span in order (empty
// ones included).
func (s *Store) Stats(tenant string, r Resolution, from, to time.Time) (total StatsBucket, series []StatsBucket, err error) {
	from, to = from.UTC().Truncate(r.Step), to.UTC()
	n := int(to.Sub(from) / r.Step)
	if to.Sub(from)%r.Step != 0 {
		n++
	}
	series = make([]StatsBucket, n)
	err = s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketStats).Cursor()
		end := statsKey(tenant, r, to)
		prefix := key(tenant, string([]byte{r.ID}))
		for k, v := c.Seek(statsKey(tenant, r, from)); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, end) < 0; k, v = c.Next() {
			var b StatsBucket
			if err := json.Unmarshal(v, &b); err != nil {
				return err
			}
			at := time.Unix(int64(binary.BigEndian.Uint64(k[len(prefix):])), 0)
			if i := int(at.Sub(from) / r.Step); i >= 0 && i < n {
				series[i].Add(b)
			}
			total.Add(b)
		}
		return nil
	})
	return total, series, err
}

func statsModels() (map[string]applyFunc, [][]byte) {
	return nil, [][]byte{bucketStats}
}
