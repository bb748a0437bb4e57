package control

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/teststore"
	"github.com/heraldhq/herald/projections"
)

func ptr[T any](v T) *T { return &v }

// existing is the subscriber most merge cases start from.
func existing() *projections.Subscriber {
	return &projections.Subscriber{
		SubscriberID: "u1",
		Contacts:     map[string][]string{"email": {"a@x.io"}, "sms": {"+15550001"}},
		Locale:       ptr("en"),
		Attributes:   json.RawMessage(`{"plan":"pro"}`),
		CreatedAt:    time.Unix(1, 0),
		UpdatedAt:    time.Unix(1, 0),
	}
}

func input(t *testing.T, body string) SubscriberInput {
	t.Helper()
	var in SubscriberInput
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatalf("input %s: %v", body, err)
	}
	return in
}

func TestMergeSubscriberRules(t *testing.T) {
	cases := []struct {
		name  string
		cur   *projections.Subscriber
		body  string
		want  events.SubscriberUpsertedData
		wantP []string // fields named by the validation error, in order
	}{
		{name: "new, empty body",
			body: `{}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{}}},
		{name: "new, everything",
			body: `{"contacts":{"email":["b@y.io"],"push":["tok"]},"locale":"fr-CA","attributes":{ "a" : [1, 2] }}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"b@y.io"}, "push": {"tok"}},
				Locale: ptr("fr-CA"), Attributes: json.RawMessage(`{"a":[1,2]}`)}},
		{name: "new, empty list adds nothing",
			body: `{"contacts":{"email":[]}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{}}},
		{name: "omitted everything keeps everything",
			cur:  existing(),
			body: `{}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"a@x.io"}, "sms": {"+15550001"}},
				Locale: ptr("en"), Attributes: json.RawMessage(`{"plan":"pro"}`)}},
		{name: "non-empty list overwrites that kind only",
			cur:  existing(),
			body: `{"contacts":{"email":["b@y.io","c@y.io"]}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"b@y.io", "c@y.io"}, "sms": {"+15550001"}},
				Locale: ptr("en"), Attributes: json.RawMessage(`{"plan":"pro"}`)}},
		{name: "empty list clears that kind",
			cur:  existing(),
			body: `{"contacts":{"sms":[]}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"a@x.io"}},
				Locale: ptr("en"), Attributes: json.RawMessage(`{"plan":"pro"}`)}},
		{name: "null list clears that kind",
			cur:  existing(),
			body: `{"contacts":{"email":null}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"sms": {"+15550001"}},
				Locale: ptr("en"), Attributes: json.RawMessage(`{"plan":"pro"}`)}},
		{name: "new kind added, others kept",
			cur:  existing(),
			body: `{"contacts":{"chat":["U0123ABCD"]}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"a@x.io"}, "sms": {"+15550001"}, "chat": {"U0123ABCD"}},
				Locale: ptr("en"), Attributes: json.RawMessage(`{"plan":"pro"}`)}},
		{name: "contacts {} and null mention no kind",
			cur:  existing(),
			body: `{"contacts":null}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"a@x.io"}, "sms": {"+15550001"}},
				Locale: ptr("en"), Attributes: json.RawMessage(`{"plan":"pro"}`)}},
		{name: "locale overwrites, attributes replaced whole",
			cur:  existing(),
			body: `{"locale":"de","attributes":{"tier":1}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"a@x.io"}, "sms": {"+15550001"}},
				Locale: ptr("de"), Attributes: json.RawMessage(`{"tier":1}`)}},
		{name: "null clears locale and attributes",
			cur:  existing(),
			body: `{"locale":null,"attributes":null}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"a@x.io"}, "sms": {"+15550001"}}}},
		{name: "empty attributes object is a value",
			cur:  existing(),
			body: `{"attributes":{}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"email": {"a@x.io"}, "sms": {"+15550001"}},
				Locale: ptr("en"), Attributes: json.RawMessage(`{}`)}},
		{name: "attributes stored escaped like the projections store them",
			body: `{"attributes":{"h":"<b>&"}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{},
				Attributes: json.RawMessage(`{"h":"\u003cb\u003e\u0026"}`)}},
		{name: "addresses of other kinds stored unparsed",
			body: `{"contacts":{"fax":["not a phone, still fine"],"push":["Bob <b@x.io>"]}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"fax": {"not a phone, still fine"}, "push": {"Bob <b@x.io>"}}}},
		{name: "addresses of sms, chat and push in their forms",
			body: `{"contacts":{"sms":["+14155550123","+12345678"],"chat":["C0123ABCD","U024BE7LH","W0123456789ABCDEFG"],"push":["` + strings.Repeat("t", 4096) + `"]}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"sms": {"+14155550123", "+12345678"},
				"chat": {"C0123ABCD", "U024BE7LH", "W0123456789ABCDEFG"}, "push": {strings.Repeat("t", 4096)}}}},
		{name: "sms not in E.164",
			body:  `{"contacts":{"sms":["+1415555012","14155550123","+1234567","+1234567890123456","+04155550123","+1 415 555 0123"]}}`,
			wantP: []string{"contacts.sms[1]", "contacts.sms[2]", "contacts.sms[3]", "contacts.sms[4]", "contacts.sms[5]"}},
		{name: "chat not a Slack id",
			body:  `{"contacts":{"chat":["@u1","#general","c0123abcd","X0123ABCD","U01"]}}`,
			wantP: []string{"contacts.chat[0]", "contacts.chat[1]", "contacts.chat[2]", "contacts.chat[3]", "contacts.chat[4]"}},
		{name: "push token over 4096 characters",
			body:  `{"contacts":{"push":["` + strings.Repeat("t", 4097) + `"]}}`,
			wantP: []string{"contacts.push[0]"}},

		{name: "bad email named by index",
			body:  `{"contacts":{"email":["ok@x.io","not-an-email","Bob <b@x.io>","<c@x.io>"]}}`,
			wantP: []string{"contacts.email[1]", "contacts.email[2]", "contacts.email[3]"}},
		{name: "address not a string",
			body:  `{"contacts":{"sms":["+14155550123",7]}}`,
			wantP: []string{"contacts.sms[1]"}},
		{name: "a null address is an empty one",
			body:  `{"contacts":{"email":[null,"a@x.io"],"sms":[null,7]}}`,
			wantP: []string{"contacts.email[0]", "contacts.sms[0]", "contacts.sms[1]"}},
		{name: "kind not a list",
			body:  `{"contacts":{"email":"a@x.io"}}`,
			wantP: []string{"contacts.email"}},
		{name: "too many addresses",
			body:  `{"contacts":{"sms":["1","2","3","4","5","6","7","8","9","10","11"]}}`,
			wantP: []string{"contacts.sms"}},
		{name: "address too long and empty",
			body:  `{"contacts":{"fax":["` + strings.Repeat("9", 321) + `",""]}}`,
			wantP: []string{"contacts.fax[0]", "contacts.fax[1]"}},
		{name: "address at the limit",
			body: `{"contacts":{"fax":["` + strings.Repeat("9", 320) + `"]}}`,
			want: events.SubscriberUpsertedData{Contacts: map[string][]string{"fax": {strings.Repeat("9", 320)}}}},
		{name: "address with a control character",
			body:  `{"contacts":{"fax":["a\nb"]}}`,
			wantP: []string{"contacts.fax[0]"}},
		{name: "bad kind name",
			body:  `{"contacts":{"e mail":["a@x.io"]}}`,
			wantP: []string{"contacts.e mail"}},
		{name: "too many kinds given",
			body:  `{"contacts":{` + kinds(17) + `}}`,
			wantP: []string{"contacts"}},
		{name: "too many kinds after the merge",
			cur:   existing(),
			body:  `{"contacts":{` + kinds(15) + `}}`,
			wantP: []string{"contacts"}},
		{name: "sixteen kinds after the merge",
			cur:  existing(),
			body: `{"contacts":{` + kinds(14) + `}}`,
			want: func() events.SubscriberUpsertedData {
				c := map[string][]string{"email": {"a@x.io"}, "sms": {"+15550001"}}
				for i := range 14 {
					c["k"+string(rune('a'+i))] = []string{"x"}
				}
				return events.SubscriberUpsertedData{Contacts: c, Locale: ptr("en"), Attributes: json.RawMessage(`{"plan":"pro"}`)}
			}()},
		{name: "locale wrong type, empty attributes not an object",
			body:  `{"locale":5,"attributes":[1]}`,
			wantP: []string{"locale", "attributes"}},
		{name: "empty locale",
			body:  `{"locale":""}`,
			wantP: []string{"locale"}},
		{name: "attributes a string",
			body:  `{"attributes":"x"}`,
			wantP: []string{"attributes"}},
		{name: "attributes over 64 KiB",
			body:  `{"attributes":{"a":"` + strings.Repeat("x", 64<<10) + `"}}`,
			wantP: []string{"attributes"}},
		{name: "every problem at once",
			body:  `{"contacts":{"email":["nope"],"sms":[1]},"locale":true,"attributes":3}`,
			wantP: []string{"contacts.email[0]", "contacts.sms[0]", "locale", "attributes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := mergeSubscriber("u1", c.cur, input(t, c.body))
			if c.wantP != nil {
				var ve *apierr.ValidationError
				if !errors.As(err, &ve) || !errors.Is(err, apierr.ErrInvalid) {
					t.Fatalf("want a validation error, got %v (%+v)", err, got)
				}
				var fields []string
				for _, p := range ve.Problems {
					fields = append(fields, p.Field)
				}
				if !slices.Equal(fields, c.wantP) {
					t.Fatalf("fields %q, want %q (%v)", fields, c.wantP, ve.Problems)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.want.SubscriberID = "u1"
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %+v\nwant %+v (attributes %s vs %s)", got, c.want, got.Attributes, c.want.Attributes)
			}
		})
	}
}

// kinds returns n contact kinds "ka", "kb"… as JSON members.
func kinds(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, `"k`+string(rune('a'+i))+`":["x"]`)
	}
	return strings.Join(parts, ",")
}

func TestMergeSubscriberDoesNotTouchCurrent(t *testing.T) {
	cur := existing()
	if _, err := mergeSubscriber("u1", cur, input(t, `{"contacts":{"email":[],"sms":["+22345678"]},"locale":null}`)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cur, existing()) {
		t.Fatalf("merge changed its input: %+v", cur)
	}
}

func TestSameSubscriberSpotsNoOps(t *testing.T) {
	cur := existing()
	for body, same := range map[string]bool{
		`{}`:                                   true,
		`{"contacts":{"email":["a@x.io"]}}`:    true,
		`{"attributes":{ "plan" : "pro" }}`:    true,
		`{"locale":"en","contacts":{"ws":[]}}`: true,
		`{"contacts":{"email":["A@x.io"]}}`:    false,
		`{"locale":null}`:                      false,
		`{"attributes":{"plan":"pro","x":1}}`:  false,
	} {
		next, err := mergeSubscriber("u1", cur, input(t, body))
		if err != nil {
			t.Fatal(err)
		}
		if got := sameSubscriber(*cur, next); got != same {
			t.Errorf("%s: same=%v, want %v", body, got, same)
		}
	}
}

func TestValidIdentifiers(t *testing.T) {
	ids := map[string]bool{
		"u1": true, "a.b": true, "a/b": true, "user@example.com": true, "with space": true,
		"ünïcødé 🚀": true, "👨‍👩‍👧": true, "..": true, strings.Repeat("é", 256): true,
		"": false, strings.Repeat("a", 257): false, "a\x00b": false, "tab\there": false,
		"new\nline": false, "\x7f": false, "bad \xff utf8": false, "c1\u0085": false,
	}
	for id, want := range ids {
		if got := ValidExternalID(id); got != want {
			t.Errorf("ValidExternalID(%q) = %v", id, got)
		}
	}
	keys := map[string]bool{
		"news": true, "a.b_c:d-E9": true, strings.Repeat("k", 128): true,
		"": false, strings.Repeat("k", 129): false, "a/b": false, "a b": false, "é": false, "a*": false,
	}
	for k, want := range keys {
		if got := ValidTopicKey(k); got != want {
			t.Errorf("ValidTopicKey(%q) = %v", k, got)
		}
	}
}

func TestMergeTopicRules(t *testing.T) {
	cur := &projections.Topic{Key: "news", Name: ptr("News"), Description: ptr("All the news"), SubscriberCount: 3}
	implicit := &projections.Topic{Key: "news", SubscriberCount: 3}
	cases := []struct {
		name  string
		cur   *projections.Topic
		body  string
		want  events.TopicUpsertedData
		wantP []string
	}{
		{name: "new, key only", body: `{}`, want: events.TopicUpsertedData{Key: "news"}},
		{name: "new with both", body: `{"name":"N","description":"line 1\nline 2"}`,
			want: events.TopicUpsertedData{Key: "news", Name: ptr("N"), Description: ptr("line 1\nline 2")}},
		{name: "omitted kept", cur: cur, body: `{}`,
			want: events.TopicUpsertedData{Key: "news", Name: ptr("News"), Description: ptr("All the news")}},
		{name: "name overwritten, description kept", cur: cur, body: `{"name":"Daily"}`,
			want: events.TopicUpsertedData{Key: "news", Name: ptr("Daily"), Description: ptr("All the news")}},
		{name: "null clears", cur: cur, body: `{"description":null}`,
			want: events.TopicUpsertedData{Key: "news", Name: ptr("News")}},
		{name: "explicit metadata on an implicit topic", cur: implicit, body: `{"name":"N"}`,
			want: events.TopicUpsertedData{Key: "news", Name: ptr("N")}},
		{name: "wrong types", body: `{"name":1,"description":{}}`, wantP: []string{"name", "description"}},
		{name: "too long", body: `{"name":"` + strings.Repeat("n", 257) + `","description":"` + strings.Repeat("d", 1025) + `"}`,
			wantP: []string{"name", "description"}},
		{name: "control character in name", body: `{"name":"a\nb"}`, wantP: []string{"name"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in TopicInput
			if err := json.Unmarshal([]byte(c.body), &in); err != nil {
				t.Fatal(err)
			}
			got, err := mergeTopic("news", c.cur, in)
			if c.wantP != nil {
				var ve *apierr.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("want a validation error, got %v", err)
				}
				var fields []string
				for _, p := range ve.Problems {
					fields = append(fields, p.Field)
				}
				if !slices.Equal(fields, c.wantP) {
					t.Fatalf("fields %q, want %q", fields, c.wantP)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v %v, want %+v", got, err, c.want)
			}
		})
	}
	if _, err := mergeTopic("bad key", nil, TopicInput{}); err == nil {
		t.Fatal("bad key accepted")
	}
}

// process is one herald process's view: its own projections on the shared
// log, run or applied by hand, and a Control over them.
type process struct {
	store *projections.Store
	ctl   *Control
}

func newProcess(t *testing.T, log *eventlog.Log, run bool) process {
	t.Helper()
	st := teststore.Open(t)
	p := process{store: st, ctl: New(Config{Log: log, Store: st})}
	if run {
		p.run(t, log)
	}
	return p
}

// answersOnceCaughtUp runs cmd, a command through p while p's store is
// behind the log: cmd must not answer from that stale state (within a
// short wait: an answer that came later would be caught by the checks of
// its result), and answers once p follows the log.
func answersOnceCaughtUp[T any](t *testing.T, p process, log *eventlog.Log, cmd func() T) T {
	t.Helper()
	res := make(chan T, 1)
	go func() { res <- cmd() }()
	select {
	case r := <-res:
		t.Fatalf("answered from stale state: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	p.run(t, log)
	return <-res
}

func (p process) run(t *testing.T, log *eventlog.Log) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.store.Run(ctx, log, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestUpsertFromAStaleProcessLosesNothing: the first attempt of an upsert
// trusts the local projection; when another process wrote since, it must
// neither overwrite that write with a merge of stale state nor answer a
// stale no-op.
func TestUpsertFromAStaleProcessLosesNothing(t *testing.T) {
	log := testnats.Log(t)
	ctx := context.Background()
	a := newProcess(t, log, true)
	b := newProcess(t, log, false) // its projector starts late

	upsert := func(p process, body string) (projections.Subscriber, bool) {
		t.Helper()
		s, created, err := p.ctl.UpsertSubscriber(ctx, "ten_1", "u1", input(t, body))
		if err != nil {
			t.Fatal(err)
		}
		return s, created
	}
	upsert(a, `{"contacts":{"email":["a@x.io"]},"locale":"en"}`)
	upsert(a, `{"locale":"fr"}`)
	evs, err := log.History(ctx, eventlog.Subject("ten_1", eventlog.AggSubscriber, "u1"), 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("history: %d %v", len(evs), err)
	}
	// B has applied only the first event: it believes locale is "en".
	if err := b.store.ApplyBatch(evs[:1]); err != nil {
		t.Fatal(err)
	}
	type result struct {
		s       projections.Subscriber
		created bool
	}
	r := answersOnceCaughtUp(t, b, log, func() result {
		s, created := upsert(b, `{"locale":"en"}`) // a no-op in B's stale eyes
		return result{s, created}
	})
	if r.created || *r.s.Locale != "en" || r.s.Contacts["email"][0] != "a@x.io" {
		t.Fatalf("B's upsert: %+v", r)
	}
	if evs, _ := log.History(ctx, eventlog.Subject("ten_1", eventlog.AggSubscriber, "u1"), 0); len(evs) != 3 {
		t.Fatalf("B's change was not appended: %d events", len(evs))
	}

	// A is now behind B: its trusted attempt conflicts, it settles, and
	// the merge keeps what B wrote.
	s, created := upsert(a, `{"contacts":{"sms":["+12345678"]}}`)
	if created || *s.Locale != "en" || s.Contacts["email"][0] != "a@x.io" || s.Contacts["sms"][0] != "+12345678" {
		t.Fatalf("A after B: %+v", s)
	}
	// A deleted-then-recreated subscriber: its subject is not empty, so a
	// create expecting 0 conflicts and is retried; 201 all the same.
	if err := a.ctl.DeleteSubscriber(ctx, "ten_1", "u1"); err != nil {
		t.Fatal(err)
	}
	if s, created := upsert(b, `{"locale":"de"}`); !created || *s.Locale != "de" || len(s.Contacts) != 0 {
		t.Fatalf("re-create through B: %+v %v", s, created)
	}
}

// applyUpTo applies the log's events 1…upto to a store that runs no
// projector: a process lagging behind the log.
func applyUpTo(t *testing.T, log *eventlog.Log, st *projections.Store, upto uint64) {
	t.Helper()
	var evs []eventlog.Event
	from := st.Applied()
	err := log.Replay(context.Background(), eventlog.Filter{}, func(ev eventlog.Event) error {
		if ev.Seq > from && ev.Seq <= upto {
			evs = append(evs, ev)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ApplyBatch(evs); err != nil {
		t.Fatal(err)
	}
}

// TestSubscribeFromAStaleProcess: a process whose projection still shows
// a link another process removed must not answer "already subscribed".
func TestSubscribeFromAStaleProcess(t *testing.T) {
	log := testnats.Log(t)
	ctx := context.Background()
	a := newProcess(t, log, true)
	b := newProcess(t, log, false)
	if _, _, err := a.ctl.UpsertSubscriber(ctx, "ten_1", "u1", SubscriberInput{}); err != nil {
		t.Fatal(err)
	}
	if _, created, err := a.ctl.Subscribe(ctx, "ten_1", "u1", "news"); err != nil || !created {
		t.Fatalf("subscribe through A: %v %v", created, err)
	}
	applyUpTo(t, log, b.store, a.store.Applied())
	if err := a.ctl.Unsubscribe(ctx, "ten_1", "u1", "news"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		created bool
		err     error
	}
	r := answersOnceCaughtUp(t, b, log, func() result {
		_, created, err := b.ctl.Subscribe(ctx, "ten_1", "u1", "news")
		return result{created, err}
	})
	if r.err != nil || !r.created {
		t.Fatalf("subscribe through B: %+v", r)
	}
	if err := a.store.WaitCaughtUp(ctx, log); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Subscription("ten_1", "u1", "news"); err != nil {
		t.Fatalf("the subscription is lost: %v", err)
	}
}

// mergeSubscriber applies the merge rules of an upsert to cur (nil: the
// subscriber does not exist yet) and returns the whole resulting state, or
// a *apierr.ValidationError naming each bad field. It is pure.
func mergeSubscriber(externalID string, cur *projections.Subscriber, in SubscriberInput) (events.SubscriberUpsertedData, error) {
	var p apierr.Problems
	checkExternalID(&p, "externalId", externalID)
	patch, pp := parseSubscriberInput(in)
	p = append(p, pp...)
	if err := p.Err(); err != nil {
		return events.SubscriberUpsertedData{}, err
	}
	next, p := patch.apply(externalID, cur)
	return next, p.Err()
}
