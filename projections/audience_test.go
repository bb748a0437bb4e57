package projections_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/projections"
)

// audience appends audience events straight to the log and waits for the
// store, for tests of the read model alone.
type audience struct {
	t      testing.TB
	log    *eventlog.Log
	st     *projections.Store
	tenant string
}

func (a audience) append(agg, id, typ string, data any) uint64 {
	a.t.Helper()
	seq, err := a.log.Append(context.Background(), eventlog.Record{
		Subject: eventlog.Subject(a.tenant, agg, id), Type: typ, Tenant: a.tenant, Data: data})
	if err != nil {
		a.t.Fatal(err)
	}
	if err := a.st.WaitFor(context.Background(), seq); err != nil {
		a.t.Fatal(err)
	}
	return seq
}

func (a audience) upsert(id string) {
	a.append(eventlog.AggSubscriber, id, events.SubscriberUpserted, events.SubscriberUpsertedData{
		SubscriberID: id, Contacts: map[string][]string{"email": {id + "@x.io"}}})
}

func (a audience) subscribe(id, topic string) uint64 {
	return a.append(eventlog.AggTopic, topic, events.SubscriberSubscribed,
		events.SubscriberSubscribedData{SubscriberID: id, TopicKey: topic})
}

func (a audience) count(topic string) int {
	a.t.Helper()
	tp, err := a.st.Topic(a.tenant, topic)
	if err != nil {
		a.t.Fatalf("topic %q: %v", topic, err)
	}
	return tp.SubscriberCount
}

func (a audience) members(topic string) []string {
	a.t.Helper()
	subs, next, err := a.st.TopicSubscribers(a.tenant, topic, projections.Page{Limit: 500})
	if err != nil || next != "" {
		a.t.Fatalf("members of %q: %v %q", topic, err, next)
	}
	var ids []string
	for _, s := range subs {
		ids = append(ids, s.SubscriberID)
	}
	return ids
}

func (a audience) topicsOf(id string) []string {
	a.t.Helper()
	subs, _, err := a.st.SubscriberTopics(a.tenant, id, projections.Page{Limit: 500})
	if err != nil {
		a.t.Fatalf("topics of %q: %v", id, err)
	}
	var keys []string
	for _, s := range subs {
		keys = append(keys, s.TopicKey)
	}
	return keys
}

func newAudience(t testing.TB, tenant string) audience {
	log, st := followed(t)
	return audience{t: t, log: log, st: st, tenant: tenant}
}

func TestSubscriberUpsertOverwritesStateKeepsCreatedAt(t *testing.T) {
	a := newAudience(t, "ten_a")
	loc := "en"
	a.append(eventlog.AggSubscriber, "u.1", events.SubscriberUpserted, events.SubscriberUpsertedData{
		SubscriberID: "u.1", Contacts: map[string][]string{"email": {"a@x.io"}}, Locale: &loc,
		Attributes: []byte(`{"a":1}`)})
	first, err := a.st.Subscriber("ten_a", "u.1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	a.append(eventlog.AggSubscriber, "u.1", events.SubscriberUpserted, events.SubscriberUpsertedData{SubscriberID: "u.1"})
	got, err := a.st.Subscriber("ten_a", "u.1")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(first.CreatedAt) || !got.UpdatedAt.After(first.UpdatedAt) {
		t.Fatalf("times: first %+v, then %+v", first, got)
	}
	if got.Contacts == nil || len(got.Contacts) != 0 || got.Locale != nil || got.Attributes != nil {
		t.Fatalf("state not overwritten: %+v", got)
	}
	if _, err := a.st.Subscriber("ten_b", "u.1"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("another tenant sees it: %v", err)
	}
}

func TestSubscriptionsCountsAndDeletes(t *testing.T) {
	a := newAudience(t, "ten_a")
	for _, id := range []string{"u1", "u2", "u3"} {
		a.upsert(id)
	}
	name := "News"
	a.append(eventlog.AggTopic, "news", events.TopicUpserted, events.TopicUpsertedData{Key: "news", Name: &name})
	a.subscribe("u1", "news")
	a.subscribe("u2", "news")
	a.subscribe("u2", "news") // repeated: no-op
	a.subscribe("u2", "sports")
	a.subscribe("u3", "sports")
	// A subscriber that does not exist leaves no trace, not even a topic.
	a.subscribe("ghost", "news")
	a.subscribe("ghost", "ghost-topic")
	if _, err := a.st.Topic("ten_a", "ghost-topic"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("topic created by a ghost subscribe: %v", err)
	}
	if a.count("news") != 2 || a.count("sports") != 2 {
		t.Fatalf("counts news=%d sports=%d", a.count("news"), a.count("sports"))
	}
	// The implicit create by a subscribe never touched the explicit name.
	if tp, _ := a.st.Topic("ten_a", "news"); tp.Name == nil || *tp.Name != "News" {
		t.Fatalf("name lost: %+v", tp)
	}
	if tp, _ := a.st.Topic("ten_a", "sports"); tp.Name != nil || tp.Description != nil {
		t.Fatalf("implicit topic has metadata: %+v", tp)
	}
	if got := a.members("news"); !slices.Equal(got, []string{"u1", "u2"}) {
		t.Fatalf("news members %v", got)
	}
	if got := a.topicsOf("u2"); !slices.Equal(got, []string{"news", "sports"}) {
		t.Fatalf("u2 topics %v", got)
	}
	// The stored link remembers the event that made it.
	s, err := a.st.Subscription("ten_a", "u1", "news")
	if err != nil || s.Seq == 0 || s.CreatedAt.IsZero() {
		t.Fatalf("subscription %+v %v", s, err)
	}

	a.append(eventlog.AggTopic, "news", events.SubscriberUnsubscribed,
		events.SubscriberUnsubscribedData{SubscriberID: "u1", TopicKey: "news"})
	a.append(eventlog.AggTopic, "news", events.SubscriberUnsubscribed, // not subscribed: no-op
		events.SubscriberUnsubscribedData{SubscriberID: "u3", TopicKey: "news"})
	if a.count("news") != 1 || !slices.Equal(a.members("news"), []string{"u2"}) {
		t.Fatalf("after unsubscribe: %d %v", a.count("news"), a.members("news"))
	}

	// Deleting u2 removes both its subscriptions and counts them off.
	a.append(eventlog.AggSubscriber, "u2", events.SubscriberDeleted, events.SubscriberDeletedData{SubscriberID: "u2"})
	if a.count("news") != 0 || a.count("sports") != 1 || len(a.members("news")) != 0 ||
		!slices.Equal(a.members("sports"), []string{"u3"}) {
		t.Fatalf("after delete: news=%d sports=%d %v", a.count("news"), a.count("sports"), a.members("sports"))
	}
	if _, _, err := a.st.SubscriberTopics("ten_a", "u2", projections.Page{}); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("deleted subscriber's topics: %v", err)
	}
	// Re-created, it starts with no subscriptions.
	a.upsert("u2")
	if got := a.topicsOf("u2"); len(got) != 0 {
		t.Fatalf("re-created subscriber kept %v", got)
	}

	a.append(eventlog.AggTopic, "sports", events.TopicDeleted, events.TopicDeletedData{Key: "sports"})
	if _, err := a.st.Topic("ten_a", "sports"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("deleted topic: %v", err)
	}
	if got := a.topicsOf("u3"); len(got) != 0 {
		t.Fatalf("subscription outlived its topic: %v", got)
	}
	if _, _, err := a.st.TopicSubscribers("ten_a", "sports", projections.Page{}); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("members of a deleted topic: %v", err)
	}
}

// TestSubscribersSubscribedLinksEach: the one-event-per-topic subscribe
// of a bulk import applies as one SubscriberSubscribed per id, at its
// sequence: a missing subscriber and a repeated link are skipped, and the
// topic counts only the new links.
func TestSubscribersSubscribedLinksEach(t *testing.T) {
	a := newAudience(t, "ten_a")
	for _, id := range []string{"u1", "u2", "u3"} {
		a.upsert(id)
	}
	a.subscribe("u2", "news")
	seq := a.append(eventlog.AggTopic, "news", events.SubscribersSubscribed,
		events.SubscribersSubscribedData{TopicKey: "news", SubscriberIDs: []string{"u1", "ghost", "u2", "u3", "u1"}})
	if got := a.members("news"); !slices.Equal(got, []string{"u1", "u2", "u3"}) || a.count("news") != 3 {
		t.Fatalf("news: %v, count %d", got, a.count("news"))
	}
	for id, want := range map[string]bool{"u1": true, "u2": false, "u3": true} {
		s, err := a.st.Subscription("ten_a", id, "news")
		if err != nil || (s.Seq == seq) != want {
			t.Errorf("%s: %+v %v, made by the bulk event: %v", id, s, err, want)
		}
	}
	if got := a.topicsOf("u3"); !slices.Equal(got, []string{"news"}) {
		t.Fatalf("u3 topics %v", got)
	}
	// Only ghosts: no link, no topic.
	a.append(eventlog.AggTopic, "empty", events.SubscribersSubscribed,
		events.SubscribersSubscribedData{TopicKey: "empty", SubscriberIDs: []string{"ghost"}})
	if _, err := a.st.Topic("ten_a", "empty"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("topic of ghosts: %v", err)
	}

	// The batch reads of a bulk writer.
	subs, err := a.st.SubscribersByID("ten_a", []string{"u3", "ghost", "u1"})
	if err != nil || len(subs) != 3 || subs[0] == nil || subs[0].SubscriberID != "u3" || subs[1] != nil ||
		subs[2] == nil || subs[2].Contacts["email"][0] != "u1@x.io" {
		t.Fatalf("SubscribersByID: %+v %v", subs, err)
	}
	got, err := a.st.Subscribed("ten_a", []string{"u1", "ghost", "u2"}, [][]string{{"news", "empty"}, {"news"}, nil})
	if err != nil || !slices.Equal(got[0], []bool{true, false}) || !slices.Equal(got[1], []bool{false}) || len(got[2]) != 0 {
		t.Fatalf("Subscribed: %v %v", got, err)
	}
}

func TestResolveTopicsDeduplicatesOverlappingTopics(t *testing.T) {
	a := newAudience(t, "ten_a")
	other := audience{t: t, log: a.log, st: a.st, tenant: "ten_b"}
	ids := []string{"u1", "u2", "u3", "u4", "u5", "a.b", "x@y.io", "ünï 🚀", "a/b"}
	for _, id := range ids {
		a.upsert(id)
	}
	topics := map[string][]string{
		"a": {"u1", "u2", "u3", "a.b"},
		"b": {"u2", "u4", "a.b", "ünï 🚀"},
		"c": {"u3", "u5", "u1", "x@y.io"},
		"d": {"a/b"},
	}
	for topic, members := range topics {
		for _, id := range members {
			a.subscribe(id, topic)
		}
	}
	// Another tenant's topic of the same key must not leak in.
	other.upsert("intruder")
	other.subscribe("intruder", "a")

	got, err := a.st.ResolveTopics("ten_a", []string{"c", "a", "b", "a", "unknown", "", "bad\x00key"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.b", "u1", "u2", "u3", "u4", "u5", "x@y.io", "ünï 🚀"}
	if !slices.Equal(got, want) {
		t.Fatalf("ResolveTopics = %q, want %q", got, want)
	}
	if got, _ := a.st.ResolveTopics("ten_a", []string{"d"}); !slices.Equal(got, []string{"a/b"}) {
		t.Fatalf("one topic: %q", got)
	}
	if got, err := a.st.ResolveTopics("ten_a", []string{"unknown"}); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("unknown topic: %#v %v", got, err)
	}
	if got, _ := a.st.ResolveTopics("ten_b", []string{"a", "b"}); !slices.Equal(got, []string{"intruder"}) {
		t.Fatalf("other tenant: %q", got)
	}

	// The same audience a page at a time, and counted, without holding it.
	keys := []string{"c", "a", "b", "a", "unknown", "", "bad\x00key"}
	var paged []string
	for from := ""; ; {
		page, err := a.st.AudiencePage("ten_a", keys, from, 3)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if len(page) < 3 {
			break
		}
		from = page[len(page)-1] + "\x00"
	}
	if !slices.Equal(paged, want) {
		t.Fatalf("AudiencePage by 3 = %q, want %q", paged, want)
	}
	if got, _ := a.st.AudiencePage("ten_a", keys, "u2", 2); !slices.Equal(got, []string{"u2", "u3"}) {
		t.Fatalf("AudiencePage from u2 = %q", got)
	}
	for _, c := range []struct {
		atMost, want int
	}{{0, len(want)}, {100, 12}} { // 12: the topics' counts summed, not walked
		if n, err := a.st.CountAudience("ten_a", keys, c.atMost); err != nil || n != c.want {
			t.Fatalf("CountAudience(atMost %d) = %d %v, want %d", c.atMost, n, err, c.want)
		}
	}
}

func TestAudienceListsPageInKeyOrder(t *testing.T) {
	a := newAudience(t, "ten_a")
	var want []string
	for i := range 23 {
		id := fmt.Sprintf("u%02d", i)
		want = append(want, id)
		a.upsert(id)
		a.subscribe(id, "all")
	}
	for _, list := range []func(projections.Page) ([]string, string, error){
		func(p projections.Page) ([]string, string, error) {
			subs, next, err := a.st.Subscribers("ten_a", p)
			var ids []string
			for _, s := range subs {
				ids = append(ids, s.SubscriberID)
			}
			return ids, next, err
		},
		func(p projections.Page) ([]string, string, error) {
			subs, next, err := a.st.TopicSubscribers("ten_a", "all", p)
			var ids []string
			for _, s := range subs {
				ids = append(ids, s.SubscriberID)
			}
			return ids, next, err
		},
	} {
		var got []string
		p := projections.Page{Limit: 5}
		for {
			ids, next, err := list(p)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids...)
			if next == "" {
				break
			}
			p.Cursor = next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("paged %v", got)
		}
	}
}

func TestAudienceRebuildIsIdentical(t *testing.T) {
	a := newAudience(t, "ten_a")
	for i := range 30 {
		a.upsert(fmt.Sprintf("u%d", i))
		a.subscribe(fmt.Sprintf("u%d", i), fmt.Sprintf("t%d", i%4))
	}
	a.append(eventlog.AggTopic, "bulk", events.SubscribersSubscribed,
		events.SubscribersSubscribedData{TopicKey: "bulk", SubscriberIDs: []string{"u5", "u3", "ghost", "u7"}})
	a.append(eventlog.AggSubscriber, "u3", events.SubscriberDeleted, events.SubscriberDeletedData{SubscriberID: "u3"})
	a.append(eventlog.AggTopic, "t1", events.SubscriberUnsubscribed, events.SubscriberUnsubscribedData{SubscriberID: "u1", TopicKey: "t1"})
	checkRebuild(t, a.log, a.st)
}

// BenchmarkResolveTopic10k resolves one topic of 10,000 subscribers (the
// target is under 20 ms), and three overlapping topics of 10,000 each.
func BenchmarkResolveTopic10k(b *testing.B) {
	a := newAudience(b, "ten_a")
	ctx := context.Background()
	const n = 10_000
	var recs []eventlog.Record
	for i := range n {
		id := fmt.Sprintf("user-%05d@example.com", i)
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject("ten_a", eventlog.AggSubscriber, id),
			Type: events.SubscriberUpserted, Tenant: "ten_a",
			Data: events.SubscriberUpsertedData{SubscriberID: id, Contacts: map[string][]string{"email": {id}}}})
	}
	// Topic big has everyone; x, y, z have overlapping halves.
	for i := range n {
		id := fmt.Sprintf("user-%05d@example.com", i)
		for _, topic := range []string{"big", []string{"x", "y", "z"}[i%3], []string{"x", "y", "z"}[(i+1)%3]} {
			recs = append(recs, eventlog.Record{Subject: eventlog.Subject("ten_a", eventlog.AggTopic, topic),
				Type: events.SubscriberSubscribed, Tenant: "ten_a",
				Data: events.SubscriberSubscribedData{SubscriberID: id, TopicKey: topic}})
		}
	}
	seqs := testnats.Append(b, a.log, recs)
	if err := a.st.WaitFor(ctx, seqs[len(seqs)-1]); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		topics []string
	}{{"one-topic", []string{"big"}}, {"three-overlapping", []string{"x", "y", "z"}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				ids, err := a.st.ResolveTopics("ten_a", c.topics)
				if err != nil || len(ids) != n {
					b.Fatalf("%d ids, %v", len(ids), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/resolve")
		})
	}
}

// TestSubscriberTokenEpoch: a subscriber's token epoch is the sequence of
// its creation, kept by its updates, moved by a revocation of its inbox
// tokens (with its Seq), and new when it is deleted and created again; a
// rebuild gives the same epochs.
func TestSubscriberTokenEpoch(t *testing.T) {
	a := newAudience(t, "ten_a")
	epoch := func(id string) projections.Subscriber {
		t.Helper()
		s, err := a.st.Subscriber("ten_a", id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	created := a.append(eventlog.AggSubscriber, "ann", events.SubscriberUpserted, events.SubscriberUpsertedData{
		SubscriberID: "ann", Contacts: map[string][]string{}})
	if s := epoch("ann"); s.TokenEpoch != created {
		t.Fatalf("after creation: epoch %d, want %d", s.TokenEpoch, created)
	}
	a.upsert("ann")                                                                                                        // the spliced row
	a.append(eventlog.AggSubscriber, "ann", events.SubscriberUpserted, events.SubscriberUpsertedData{SubscriberID: "ann"}) // json.Marshal's
	if s := epoch("ann"); s.TokenEpoch != created {
		t.Fatalf("after updates: epoch %d, want %d", s.TokenEpoch, created)
	}
	revoked := a.append(eventlog.AggSubscriber, "ann", events.InboxTokensRevoked, events.InboxTokensRevokedData{SubscriberID: "ann"})
	if s := epoch("ann"); s.TokenEpoch != revoked || s.Seq != revoked {
		t.Fatalf("after a revocation: %+v, want epoch and seq %d", s, revoked)
	}
	a.upsert("ann")
	if s := epoch("ann"); s.TokenEpoch != revoked {
		t.Fatalf("an update after a revocation: epoch %d, want %d", s.TokenEpoch, revoked)
	}
	a.append(eventlog.AggSubscriber, "ghost", events.InboxTokensRevoked, events.InboxTokensRevokedData{SubscriberID: "ghost"})
	if _, err := a.st.Subscriber("ten_a", "ghost"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("a revocation created a subscriber: %v", err)
	}
	a.append(eventlog.AggSubscriber, "ann", events.SubscriberDeleted, events.SubscriberDeletedData{SubscriberID: "ann"})
	again := a.append(eventlog.AggSubscriber, "ann", events.SubscriberUpserted, events.SubscriberUpsertedData{
		SubscriberID: "ann", Contacts: map[string][]string{}})
	if s := epoch("ann"); s.TokenEpoch != again {
		t.Fatalf("created again: epoch %d, want %d", s.TokenEpoch, again)
	}

	live, err := a.st.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := projections.Rebuild(context.Background(), filepath.Join(t.TempDir(), "r.db"), a.log, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	if sum, _ := rebuilt.Checksum(); sum != live {
		t.Fatalf("rebuilt %s != live %s", sum, live)
	}
}
