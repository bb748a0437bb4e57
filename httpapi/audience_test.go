package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
)

type subscriberBody struct {
	SubscriberID string              `json:"subscriberId"`
	Contacts     map[string][]string `json:"contacts"`
	Locale       *string             `json:"locale"`
	Attributes   map[string]any      `json:"attributes"`
	CreatedAt    string              `json:"createdAt"`
	UpdatedAt    string              `json:"updatedAt"`
}

type topicBody struct {
	Key             string  `json:"key"`
	Name            *string `json:"name"`
	Description     *string `json:"description"`
	SubscriberCount int     `json:"subscriberCount"`
	CreatedAt       string  `json:"createdAt"`
	UpdatedAt       string  `json:"updatedAt"`
}

type subscriptionBody struct {
	SubscriberID string `json:"subscriberId"`
	TopicKey     string `json:"topicKey"`
	CreatedAt    string `json:"createdAt"`
}

type page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

var tsFormat = `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`

// sub is the path of a subscriber: its id percent-encoded as one segment.
func sub(id string) string { return "/v1/subscribers/" + url.PathEscape(id) }

func keysOf(t *testing.T, r testherald.Response) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(r.Map(t)))
}

// created decodes r, a 201 whose body holds exactly the keys keys (in
// sorted order), into a T.
func created[T any](t *testing.T, r testherald.Response, keys ...string) T {
	t.Helper()
	if r.Status != http.StatusCreated {
		t.Fatalf("want 201, got %d %s", r.Status, r.Body)
	}
	if got := keysOf(t, r); !slices.Equal(got, keys) {
		t.Fatalf("keys %v, want %v", got, keys)
	}
	var v T
	r.JSON(t, &v)
	return v
}

func expect(t *testing.T, r testherald.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.ErrorCode() != code {
		t.Fatalf("want %d %q, got %d %s", status, code, r.Status, r.Body)
	}
}

// problems returns the fields named by a 422 body.
func problems(t *testing.T, r testherald.Response) []string {
	t.Helper()
	var b struct {
		Error struct {
			Details []struct{ Field string }
		}
	}
	r.JSON(t, &b)
	var fields []string
	for _, d := range b.Error.Details {
		fields = append(fields, d.Field)
	}
	return fields
}

func TestSubscriberUpsertMergeGetListDelete(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")

	r := h.Do("PUT", sub("u1"), key, `{"contacts":{"email":["a@x.io"],"sms":["+15550001"]},"locale":"en","attributes":{"plan":"pro"}}`)
	s := created[subscriberBody](t, r, "attributes", "contacts", "createdAt", "locale", "subscriberId", "timezone", "updatedAt")
	if s.SubscriberID != "u1" || s.Contacts["email"][0] != "a@x.io" || *s.Locale != "en" || s.Attributes["plan"] != "pro" {
		t.Fatalf("created %+v", s)
	}
	if !regexpMatch(tsFormat, s.CreatedAt) || s.CreatedAt != s.UpdatedAt {
		t.Fatalf("times %q %q", s.CreatedAt, s.UpdatedAt)
	}

	// The same content again: 200, nothing changes (no event appended).
	time.Sleep(5 * time.Millisecond)
	r = h.Do("PUT", sub("u1"), key, `{"contacts":{"email":["a@x.io"]},"locale":"en"}`)
	var same subscriberBody
	r.JSON(t, &same)
	if r.Status != http.StatusOK || same.UpdatedAt != s.UpdatedAt {
		t.Fatalf("no-op re-PUT: %d %s", r.Status, r.Body)
	}

	// Merge: email overwritten, sms cleared, push added, locale and
	// attributes kept.
	r = h.Do("PUT", sub("u1"), key, `{"contacts":{"email":["b@x.io","c@x.io"],"sms":[],"push":["tok"]}}`)
	var m subscriberBody
	r.JSON(t, &m)
	if r.Status != http.StatusOK || !slices.Equal(m.Contacts["email"], []string{"b@x.io", "c@x.io"}) ||
		m.Contacts["push"][0] != "tok" || *m.Locale != "en" || m.Attributes["plan"] != "pro" ||
		m.CreatedAt != s.CreatedAt || m.UpdatedAt == s.UpdatedAt {
		t.Fatalf("merge: %d %s", r.Status, r.Body)
	}
	if _, ok := m.Contacts["sms"]; ok || strings.Contains(string(r.Body), "sms") {
		t.Fatalf("cleared kind still shown: %s", r.Body)
	}

	// Read-your-writes: GET right after sees it; null clears.
	r = h.Do("PUT", sub("u1"), key, `{"locale":null,"attributes":null}`)
	if r.Status != http.StatusOK {
		t.Fatalf("clear: %d %s", r.Status, r.Body)
	}
	r = h.Do("GET", sub("u1"), key, nil)
	var g map[string]any
	r.JSON(t, &g)
	if r.Status != 200 || g["locale"] != nil || g["attributes"] != nil || g["subscriberId"] != "u1" {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}

	// An empty body creates a subscriber with nothing.
	r = h.Do("PUT", sub("u2"), key, nil)
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"contacts":{}`) {
		t.Fatalf("empty create: %d %s", r.Status, r.Body)
	}

	r = h.Do("GET", "/v1/subscribers", key, nil)
	var l page[subscriberBody]
	r.JSON(t, &l)
	if r.Status != 200 || len(l.Data) != 2 || l.Data[0].SubscriberID != "u1" || l.Data[1].SubscriberID != "u2" || l.NextCursor != nil {
		t.Fatalf("list: %s", r.Body)
	}

	if r := h.Do("DELETE", sub("u1"), key, nil); r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	expect(t, h.Do("GET", sub("u1"), key, nil), 404, "subscriber_not_found")
	expect(t, h.Do("DELETE", sub("u1"), key, nil), 404, "subscriber_not_found")
	// Re-created after a delete: 201 again.
	if r := h.Do("PUT", sub("u1"), key, nil); r.Status != http.StatusCreated {
		t.Fatalf("re-create: %d", r.Status)
	}
}

func regexpMatch(pattern, s string) bool {
	return regexp.MustCompile(pattern).MatchString(s)
}

func TestIdentifiersAreData(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	ids := []string{"a.b", "a/b", "user@example.com", "with space", "ünïcødé 🚀", "..x", "*", ">", "a%2Fb", "+1 (555)", strings.Repeat("é", 256)}
	for _, id := range ids {
		r := h.Do("PUT", sub(id), key, map[string]any{"contacts": map[string][]string{"email": {"x@y.io"}}})
		var s subscriberBody
		r.JSON(t, &s)
		if r.Status != http.StatusCreated || s.SubscriberID != id {
			t.Fatalf("PUT %q: %d %s", id, r.Status, r.Body)
		}
		r = h.Do("GET", sub(id), key, nil)
		r.JSON(t, &s)
		if r.Status != 200 || s.SubscriberID != id {
			t.Fatalf("GET %q: %d %s", id, r.Status, r.Body)
		}
		r = h.Do("PUT", sub(id)+"/subscriptions/all.users:v1", key, nil)
		var sb subscriptionBody
		r.JSON(t, &sb)
		if r.Status != http.StatusCreated || sb.SubscriberID != id || sb.TopicKey != "all.users:v1" {
			t.Fatalf("subscribe %q: %d %s", id, r.Status, r.Body)
		}
	}
	// "a/b" and "a%2Fb" are two different subscribers; "a" is none.
	expect(t, h.Do("GET", sub("a"), key, nil), 404, "subscriber_not_found")
	// The path written by hand, with a literal @ and an encoded slash.
	if r := h.Do("GET", "/v1/subscribers/user@example.com", key, nil); r.Status != 200 {
		t.Fatalf("literal @: %d", r.Status)
	}
	if r := h.Do("GET", "/v1/subscribers/a%2Fb", key, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"subscriberId":"a/b"`) {
		t.Fatalf("encoded slash: %d %s", r.Status, r.Body)
	}
	r := h.Do("GET", "/v1/topics/all.users:v1/subscribers?limit=500", key, nil)
	var members page[subscriptionBody]
	r.JSON(t, &members)
	var got []string
	for _, m := range members.Data {
		got = append(got, m.SubscriberID)
	}
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(got, want) {
		t.Fatalf("members %q\nwant    %q", got, want)
	}
	for _, id := range ids {
		if r := h.Do("DELETE", sub(id), key, nil); r.Status != http.StatusNoContent {
			t.Fatalf("DELETE %q: %d %s", id, r.Status, r.Body)
		}
	}
	r = h.Do("GET", "/v1/topics/all.users:v1", key, nil)
	var tp topicBody
	r.JSON(t, &tp)
	if tp.SubscriberCount != 0 {
		t.Fatalf("count after deleting every subscriber: %s", r.Body)
	}
}

func TestAudienceValidation(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.Do("PUT", sub("u1"), key, nil)
	h.Do("PUT", "/v1/topics/news", key, nil)
	kinds17 := map[string][]string{}
	for i := range 17 {
		kinds17[fmt.Sprintf("k%d", i)] = []string{"x"}
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = fmt.Sprintf("+1555000%02d", i)
	}
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code               string
		fields             []string
	}{
		{"unknown field", "PUT", sub("u1"), `{"Locale":"en"}`, 422, "validation_failed", []string{"Locale"}},
		{"unknown nested field is data", "PUT", sub("u1"), `{"attributes":{"Anything":1}}`, 200, "", nil},
		{"contacts wrong type", "PUT", sub("u1"), `{"contacts":["a@x.io"]}`, 422, "validation_failed", []string{"contacts"}},
		{"kind wrong type", "PUT", sub("u1"), `{"contacts":{"email":"a@x.io"}}`, 422, "validation_failed", []string{"contacts.email"}},
		{"address wrong type", "PUT", sub("u1"), `{"contacts":{"email":[7]}}`, 422, "validation_failed", []string{"contacts.email[0]"}},
		{"bad email", "PUT", sub("u1"), `{"contacts":{"email":["a@x.io","nope"]}}`, 422, "validation_failed", []string{"contacts.email[1]"}},
		{"email with a name", "PUT", sub("u1"), `{"contacts":{"email":["Bob <b@x.io>"]}}`, 422, "validation_failed", []string{"contacts.email[0]"}},
		{"17 kinds", "PUT", sub("u1"), map[string]any{"contacts": kinds17}, 422, "validation_failed", []string{"contacts"}},
		{"11 addresses", "PUT", sub("u1"), map[string]any{"contacts": map[string][]string{"sms": eleven}}, 422, "validation_failed", []string{"contacts.sms"}},
		{"321-char address", "PUT", sub("u1"), map[string]any{"contacts": map[string][]string{"sms": {strings.Repeat("9", 321)}}}, 422, "validation_failed", []string{"contacts.sms[0]"}},
		{"locale wrong type", "PUT", sub("u1"), `{"locale":1}`, 422, "validation_failed", []string{"locale"}},
		{"attributes not an object", "PUT", sub("u1"), `{"attributes":[1]}`, 422, "validation_failed", []string{"attributes"}},
		{"attributes over 64 KiB", "PUT", sub("u1"), `{"attributes":{"a":"` + strings.Repeat("x", 65<<10) + `"}}`, 422, "validation_failed", []string{"attributes"}},
		{"several at once", "PUT", sub("u1"), `{"contacts":{"email":["x"]},"locale":true}`, 422, "validation_failed", []string{"contacts.email[0]", "locale"}},
		{"id too long", "PUT", sub(strings.Repeat("a", 257)), nil, 422, "validation_failed", []string{"externalId"}},
		{"id with a newline", "PUT", "/v1/subscribers/a%0Ab", nil, 422, "validation_failed", []string{"externalId"}},
		{"id with NUL", "GET", "/v1/subscribers/a%00b", nil, 422, "validation_failed", []string{"externalId"}},
		{"malformed JSON", "PUT", sub("u1"), `{"contacts":`, 400, "invalid_json", nil},
		{"trailing data", "PUT", sub("u1"), `{} []`, 400, "invalid_json", nil},
		{"body too large", "PUT", sub("u1"), `{"attributes":{"a":"` + strings.Repeat("x", 1<<20) + `"}}`, 413, "body_too_large", nil},
		{"topic key with a space", "PUT", "/v1/topics/a%20b", nil, 422, "validation_failed", []string{"key"}},
		{"topic key with a slash", "GET", "/v1/topics/a%2Fb", nil, 422, "validation_failed", []string{"key"}},
		{"topic key too long", "PUT", "/v1/topics/" + strings.Repeat("k", 129), nil, 422, "validation_failed", []string{"key"}},
		{"topic name wrong type", "PUT", "/v1/topics/news", `{"name":1}`, 422, "validation_failed", []string{"name"}},
		{"topic name too long", "PUT", "/v1/topics/news", map[string]string{"name": strings.Repeat("n", 257)}, 422, "validation_failed", []string{"name"}},
		{"topic description too long", "PUT", "/v1/topics/news", map[string]string{"description": strings.Repeat("d", 1025)}, 422, "validation_failed", []string{"description"}},
		{"topic unknown field", "PUT", "/v1/topics/news", `{"title":"x"}`, 422, "validation_failed", []string{"title"}},
		{"subscribe bad topic key", "PUT", sub("u1") + "/subscriptions/a%20b", nil, 422, "validation_failed", []string{"topicKey"}},
		{"subscribe with a body field", "PUT", sub("u1") + "/subscriptions/news", `{"x":1}`, 422, "validation_failed", []string{"x"}},
		{"subscribe bad both", "PUT", sub(strings.Repeat("a", 257)) + "/subscriptions/a%20b", nil, 422, "validation_failed", []string{"externalId", "topicKey"}},
		{"limit zero", "GET", "/v1/subscribers?limit=0", nil, 422, "validation_failed", []string{"limit"}},
		{"limit too big", "GET", "/v1/topics?limit=501", nil, 422, "validation_failed", []string{"limit"}},
		{"bad cursor", "GET", "/v1/topics/news/subscribers?cursor=!!", nil, 422, "validation_failed", []string{"cursor"}},
		{"bad cursor on subscriptions", "GET", sub("u1") + "/subscriptions?cursor=!!", nil, 422, "validation_failed", []string{"cursor"}},
		{"wrong method", "POST", "/v1/subscribers", nil, 405, "method_not_allowed", nil},
		{"wrong method on a topic", "PATCH", "/v1/topics/news", nil, 405, "method_not_allowed", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.Do(c.method, c.path, key, c.body)
			if r.Status != c.status || r.ErrorCode() != c.code {
				t.Fatalf("%d %s", r.Status, truncate(r.Body))
			}
			if c.fields != nil {
				if got := problems(t, r); !slices.Equal(got, c.fields) {
					t.Fatalf("fields %q, want %q: %s", got, c.fields, r.Body)
				}
			}
		})
	}
	// Nothing invalid was stored: u1 is as created (attributes set once
	// by the valid case only).
	r := h.Do("GET", sub("u1"), key, nil)
	var s subscriberBody
	r.JSON(t, &s)
	if len(s.Contacts) != 0 || s.Locale != nil {
		t.Fatalf("an invalid request changed u1: %s", r.Body)
	}
	// Every route wants a key.
	for _, path := range []string{"/v1/subscribers", sub("u1"), sub("u1") + "/subscriptions", "/v1/topics", "/v1/topics/news", "/v1/topics/news/subscribers"} {
		r := h.Do("GET", path, "", nil)
		if r.Status != 401 || r.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("%s without a key: %d", path, r.Status)
		}
	}
	expect(t, h.Do("PUT", sub("u9"), "hk_AAAAAAAA_"+strings.Repeat("A", 32), nil), 401, "unauthorized")
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func TestTopicsAndSubscriptions(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")

	r := h.Do("PUT", "/v1/topics/news", key, `{"name":"News","description":"All of it"}`)
	tp := created[topicBody](t, r, "createdAt", "description", "key", "name", "subscriberCount", "updatedAt")
	if tp.Key != "news" || *tp.Name != "News" || *tp.Description != "All of it" || tp.SubscriberCount != 0 || !regexpMatch(tsFormat, tp.CreatedAt) {
		t.Fatalf("topic %s", r.Body)
	}
	// Omitted description is kept; the same content again is a 200 no-op.
	r = h.Do("PUT", "/v1/topics/news", key, `{"name":"Daily news"}`)
	r.JSON(t, &tp)
	if r.Status != 200 || *tp.Name != "Daily news" || *tp.Description != "All of it" {
		t.Fatalf("update topic: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/topics/news", key, nil); r.Status != 200 {
		t.Fatalf("empty update: %d", r.Status)
	}

	for _, id := range []string{"u1", "u2", "u3"} {
		h.Do("PUT", sub(id), key, nil)
	}
	// Subscribing: 201 new, 200 existing with the first createdAt.
	r = h.Do("PUT", sub("u1")+"/subscriptions/news", key, nil)
	first := created[subscriptionBody](t, r, "createdAt", "subscriberId", "topicKey")
	var again subscriptionBody
	r = h.Do("PUT", sub("u1")+"/subscriptions/news", key, `{}`)
	r.JSON(t, &again)
	if r.Status != http.StatusOK || again != first {
		t.Fatalf("re-subscribe: %d %s vs %+v", r.Status, r.Body, first)
	}
	h.Do("PUT", sub("u2")+"/subscriptions/news", key, nil)
	// A subscribe to an unknown key creates the topic, key only.
	if r := h.Do("PUT", sub("u2")+"/subscriptions/sports", key, nil); r.Status != http.StatusCreated {
		t.Fatalf("implicit: %d %s", r.Status, r.Body)
	}
	r = h.Do("GET", "/v1/topics/sports", key, nil)
	var implicit map[string]any
	r.JSON(t, &implicit)
	if r.Status != 200 || implicit["name"] != nil || implicit["description"] != nil || implicit["subscriberCount"] != float64(1) {
		t.Fatalf("implicit topic: %d %s", r.Status, r.Body)
	}
	// The explicit metadata of news survived the subscribes.
	r = h.Do("GET", "/v1/topics/news", key, nil)
	r.JSON(t, &tp)
	if *tp.Name != "Daily news" || tp.SubscriberCount != 2 {
		t.Fatalf("news after subscribes: %s", r.Body)
	}
	// An explicit PUT on the implicit topic answers 200: it existed.
	if r := h.Do("PUT", "/v1/topics/sports", key, `{"name":"Sports"}`); r.Status != 200 {
		t.Fatalf("explicit after implicit: %d", r.Status)
	}

	expect(t, h.Do("PUT", sub("nobody")+"/subscriptions/news", key, nil), 404, "subscriber_not_found")
	expect(t, h.Do("GET", "/v1/topics/nobody-topic", key, nil), 404, "topic_not_found")
	expect(t, h.Do("GET", "/v1/topics/nobody-topic/subscribers", key, nil), 404, "topic_not_found")
	expect(t, h.Do("GET", sub("nobody")+"/subscriptions", key, nil), 404, "subscriber_not_found")
	expect(t, h.Do("DELETE", sub("u3")+"/subscriptions/news", key, nil), 404, "subscription_not_found")
	expect(t, h.Do("DELETE", "/v1/topics/nobody-topic", key, nil), 404, "topic_not_found")

	r = h.Do("GET", sub("u2")+"/subscriptions", key, nil)
	var subs page[map[string]any]
	r.JSON(t, &subs)
	if r.Status != 200 || len(subs.Data) != 2 || subs.Data[0]["topicKey"] != "news" || subs.Data[1]["topicKey"] != "sports" ||
		len(subs.Data[0]) != 2 || !regexpMatch(tsFormat, subs.Data[0]["createdAt"].(string)) {
		t.Fatalf("subscriptions of u2: %s", r.Body)
	}
	r = h.Do("GET", "/v1/topics/news/subscribers?limit=1", key, nil)
	var members page[map[string]any]
	r.JSON(t, &members)
	if r.Status != 200 || len(members.Data) != 1 || members.Data[0]["subscriberId"] != "u1" || len(members.Data[0]) != 2 || members.NextCursor == nil {
		t.Fatalf("members page 1: %s", r.Body)
	}
	r = h.Do("GET", "/v1/topics/news/subscribers?limit=1&cursor="+*members.NextCursor, key, nil)
	r.JSON(t, &members)
	if len(members.Data) != 1 || members.Data[0]["subscriberId"] != "u2" {
		t.Fatalf("members page 2: %s", r.Body)
	}
	r = h.Do("GET", "/v1/topics", key, nil)
	var topics page[topicBody]
	r.JSON(t, &topics)
	if len(topics.Data) != 2 || topics.Data[0].Key != "news" || topics.Data[1].Key != "sports" {
		t.Fatalf("topics: %s", r.Body)
	}

	// A topic with subscribers cannot be deleted.
	expect(t, h.Do("DELETE", "/v1/topics/news", key, nil), 409, "topic_has_subscribers")
	if r := h.Do("DELETE", sub("u1")+"/subscriptions/news", key, nil); r.Status != 204 {
		t.Fatalf("unsubscribe: %d %s", r.Status, r.Body)
	}
	expect(t, h.Do("DELETE", sub("u1")+"/subscriptions/news", key, nil), 404, "subscription_not_found")
	// Deleting u2 takes its subscriptions and counts with it.
	if r := h.Do("DELETE", sub("u2"), key, nil); r.Status != 204 {
		t.Fatalf("delete u2: %d", r.Status)
	}
	r = h.Do("GET", "/v1/topics/news", key, nil)
	r.JSON(t, &tp)
	if tp.SubscriberCount != 0 {
		t.Fatalf("count after subscriber delete: %s", r.Body)
	}
	if r := h.Do("DELETE", "/v1/topics/news", key, nil); r.Status != 204 {
		t.Fatalf("delete topic: %d %s", r.Status, r.Body)
	}
	if r := h.Do("DELETE", "/v1/topics/sports", key, nil); r.Status != 204 {
		t.Fatalf("delete sports: %d %s", r.Status, r.Body)
	}
	expect(t, h.Do("GET", "/v1/topics/news", key, nil), 404, "topic_not_found")
	expect(t, h.Do("DELETE", "/v1/topics/news", key, nil), 404, "topic_not_found")
	if r := h.Do("PUT", "/v1/topics/news", key, nil); r.Status != 201 {
		t.Fatalf("re-create topic: %d", r.Status)
	}
}

func TestAudienceTenantIsolation(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, a := h.Tenant("A")
	_, b := h.Tenant("B")
	h.Do("PUT", sub("u1"), a, `{"contacts":{"email":["a@x.io"]}}`)
	h.Do("PUT", "/v1/topics/news", a, `{"name":"A news"}`)
	h.Do("PUT", sub("u1")+"/subscriptions/news", a, nil)

	expect(t, h.Do("GET", sub("u1"), b, nil), 404, "subscriber_not_found")
	expect(t, h.Do("DELETE", sub("u1"), b, nil), 404, "subscriber_not_found")
	expect(t, h.Do("GET", sub("u1")+"/subscriptions", b, nil), 404, "subscriber_not_found")
	expect(t, h.Do("PUT", sub("u1")+"/subscriptions/news", b, nil), 404, "subscriber_not_found")
	expect(t, h.Do("DELETE", sub("u1")+"/subscriptions/news", b, nil), 404, "subscription_not_found")
	expect(t, h.Do("GET", "/v1/topics/news", b, nil), 404, "topic_not_found")
	expect(t, h.Do("GET", "/v1/topics/news/subscribers", b, nil), 404, "topic_not_found")
	expect(t, h.Do("DELETE", "/v1/topics/news", b, nil), 404, "topic_not_found")
	for _, path := range []string{"/v1/subscribers", "/v1/topics"} {
		r := h.Do("GET", path, b, nil)
		if r.Status != 200 || string(r.Body) != "{\"data\":[],\"nextCursor\":null}\n" {
			t.Fatalf("B's %s: %s", path, r.Body)
		}
	}
	// B's own u1 and news are separate resources.
	if r := h.Do("PUT", sub("u1"), b, nil); r.Status != 201 {
		t.Fatalf("B's u1: %d", r.Status)
	}
	if r := h.Do("PUT", "/v1/topics/news", b, nil); r.Status != 201 {
		t.Fatalf("B's news: %d", r.Status)
	}
	r := h.Do("GET", "/v1/topics/news", a, nil)
	var tp topicBody
	r.JSON(t, &tp)
	if *tp.Name != "A news" || tp.SubscriberCount != 1 {
		t.Fatalf("A's news changed: %s", r.Body)
	}
	r = h.Do("GET", sub("u1"), a, nil)
	var s subscriberBody
	r.JSON(t, &s)
	if s.Contacts["email"][0] != "a@x.io" {
		t.Fatalf("A's u1 changed: %s", r.Body)
	}
}

// TestDeleteTopicRacesSubscribes: 50 goroutines subscribe to a topic
// while another deletes it. Either the delete answers 409, or no
// subscription made before it survives; never a subscription without its
// topic, and the count, the member list and every subscriber's own list
// agree.
func TestDeleteTopicRacesSubscribes(t *testing.T) {
	// Some 700 requests of one tenant in well under a second: no rate limit.
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_RATE_LIMIT": "0"}})
	tenant, key := h.Tenant("Acme")
	const n = 50
	for i := range n {
		if r := h.Do("PUT", sub(fmt.Sprintf("s%02d", i)), key, nil); r.Status != 201 {
			t.Fatal(r.Status)
		}
	}
	outcomes := map[int]int{}
	for round := range 6 {
		topic := fmt.Sprintf("race-%d", round)
		if r := h.Do("PUT", "/v1/topics/"+topic, key, `{"name":"Race"}`); r.Status != 201 {
			t.Fatal(r.Status)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		statuses := make([]int, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				statuses[i] = h.Do("PUT", sub(fmt.Sprintf("s%02d", i))+"/subscriptions/"+topic, key, nil).Status
			}()
		}
		var del testherald.Response
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Vary where in the burst the delete lands.
			time.Sleep(time.Duration(round) * time.Millisecond)
			del = h.Do("DELETE", "/v1/topics/"+topic, key, nil)
		}()
		close(start)
		wg.Wait()
		for i, st := range statuses {
			if st != http.StatusCreated {
				t.Fatalf("round %d: subscribe s%02d answered %d", round, i, st)
			}
		}
		if del.Status != http.StatusNoContent && del.ErrorCode() != "topic_has_subscribers" {
			t.Fatalf("round %d: delete answered %d %s", round, del.Status, del.Body)
		}
		outcomes[del.Status]++

		// Every subscriber's own view of this topic.
		var listed []string
		for i := range n {
			id := fmt.Sprintf("s%02d", i)
			r := h.Do("GET", sub(id)+"/subscriptions?limit=500", key, nil)
			var l page[subscribedTopicBody]
			r.JSON(t, &l)
			for _, s := range l.Data {
				if s.TopicKey == topic {
					listed = append(listed, id)
				}
			}
		}
		r := h.Do("GET", "/v1/topics/"+topic, key, nil)
		if r.Status == http.StatusNotFound {
			if len(listed) != 0 {
				t.Fatalf("round %d: dangling subscriptions of a deleted topic: %v", round, listed)
			}
			continue
		}
		var tp topicBody
		r.JSON(t, &tp)
		r = h.Do("GET", "/v1/topics/"+topic+"/subscribers?limit=500", key, nil)
		var members page[subscriptionBody]
		r.JSON(t, &members)
		// A subscription survived the delete when its event comes before
		// the delete's in the log. Their createdAt cannot tell: each event
		// is stamped before its append, so two concurrent subscribes may
		// land in the log in the other order than their stamps.
		var deleted uint64
		if del.Status == http.StatusNoContent {
			evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggTopic, topic), 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Type == events.TopicDeleted {
					deleted = ev.Seq
				}
			}
			if deleted == 0 {
				t.Fatalf("round %d: the delete answered 204 and recorded no TopicDeleted", round)
			}
		}
		var ids []string
		for _, m := range members.Data {
			ids = append(ids, m.SubscriberID)
			if deleted == 0 {
				continue
			}
			if s, err := h.Store().Subscription(tenant, m.SubscriberID, topic); err != nil || s.Seq < deleted {
				t.Fatalf("round %d: subscription of %s (log sequence %d, %v) survived the delete (sequence %d)", round, m.SubscriberID, s.Seq, err, deleted)
			}
		}
		if !slices.Equal(ids, listed) || tp.SubscriberCount != len(ids) {
			t.Fatalf("round %d: count %d, members %v, subscribers list %v", round, tp.SubscriberCount, ids, listed)
		}
		if del.Status == http.StatusNoContent && tp.Name != nil {
			t.Fatalf("round %d: a re-created topic kept the deleted one's name", round)
		}
		if del.Status == http.StatusConflict && len(ids) != n {
			t.Fatalf("round %d: delete refused, yet %d members", round, len(ids))
		}
	}
	t.Logf("delete outcomes over the rounds: %v", outcomes)
}

type subscribedTopicBody struct {
	TopicKey  string `json:"topicKey"`
	CreatedAt string `json:"createdAt"`
}

// TestPagingWhileInserting pages through subscribers and through a
// topic's members while other clients insert between the pages: every
// item present from the start comes exactly once, in order, and nothing
// is repeated.
func TestPagingWhileInserting(t *testing.T) {
	// Three writers of one tenant as fast as they go: no rate limit.
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_RATE_LIMIT": "0"}})
	_, key := h.Tenant("Acme")
	var before []string
	for i := range 60 {
		id := fmt.Sprintf("s%03d", i*2)
		before = append(before, id)
		h.Do("PUT", sub(id), key, nil)
		h.Do("PUT", sub(id)+"/subscriptions/all", key, nil)
	}
	for _, path := range []string{"/v1/subscribers", "/v1/topics/all/subscribers"} {
		t.Run(path, func(t *testing.T) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						// Odd ids fall between the existing ones; "r…" ones
						// after them all.
						id := fmt.Sprintf("s%03d-%s-%d", (i*7+w)%120|1, strings.TrimPrefix(path, "/v1/"), i)
						if i%3 == 0 {
							id = fmt.Sprintf("z-%d-%d", w, i)
						}
						h.Do("PUT", sub(id), key, nil)
						h.Do("PUT", sub(id)+"/subscriptions/all", key, nil)
					}
				}()
			}
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				q := path + "?limit=7"
				if cursor != "" {
					q += "&cursor=" + url.QueryEscape(cursor)
				}
				r := h.Do("GET", q, key, nil)
				var l page[map[string]any]
				r.JSON(t, &l)
				for _, item := range l.Data {
					got = append(got, item["subscriberId"].(string))
				}
				if l.NextCursor == nil {
					break
				}
				cursor = *l.NextCursor
				time.Sleep(2 * time.Millisecond) // let the writers in between pages
			}
			close(stop)
			wg.Wait()
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] {
					t.Fatalf("not strictly increasing (a repeat or a step back) at %d: %q then %q", i, got[i-1], got[i])
				}
			}
			seen := map[string]bool{}
			for _, id := range got {
				seen[id] = true
			}
			for _, id := range before {
				if !seen[id] {
					t.Fatalf("skipped %q", id)
				}
			}
			if len(got) <= len(before) {
				t.Logf("no concurrent insert was seen (%d items)", len(got))
			}
		})
	}
}

// BenchmarkSubscriberUpsertHTTP measures subscriber upserts through the
// HTTP API with a few concurrent clients (4 × GOMAXPROCS). Every PUT
// returns only once the local projection holds the write (its body is
// read back from it), so each answer is read-your-writes. Sub-benchmarks:
// create (new ids), update (existing ids, changed content) and
// put-then-get (a PUT followed by a GET that must see it; one op = both).
func BenchmarkSubscriberUpsertHTTP(b *testing.B) {
	h := testherald.Start(b, testherald.Options{})
	_, key := h.Tenant("Acme")
	api := h.API(key)
	api.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	do := func(method, path string, body []byte) (int, []byte, error) {
		r, err := api.Send(context.Background(), method, path, body)
		return r.Status, r.Body, err
	}
	var seq atomic.Int64
	for _, mode := range []string{"create", "update", "put-then-get"} {
		b.Run(mode, func(b *testing.B) {
			b.SetParallelism(4)
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					id := fmt.Sprintf("user.%d@example.com", i)
					want := http.StatusCreated
					if mode == "update" {
						id, want = fmt.Sprintf("user.%d@example.com", i%1000), 0
					}
					body := fmt.Appendf(nil, `{"contacts":{"email":[%q]},"locale":"en","attributes":{"n":%d}}`, id, i)
					status, data, err := do("PUT", sub(id), body)
					if err != nil || (want != 0 && status != want) || status >= 300 || !bytes.Contains(data, fmt.Appendf(nil, `{"n":%d}`, i)) {
						b.Errorf("PUT %s: %d %s %v", id, status, data, err)
						return
					}
					if mode == "put-then-get" {
						status, data, err := do("GET", sub(id), nil)
						if err != nil || status != 200 || !bytes.Contains(data, fmt.Appendf(nil, `{"n":%d}`, i)) {
							b.Errorf("GET %s after PUT: %d %s %v", id, status, data, err)
							return
						}
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			// CPU of the whole process (server and clients) per op: less
			// sensitive than ops/s to other load on the machine.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime returns the user and system CPU time the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
