package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/projections"
)

// bulkResult is one item of a bulk answer.
type bulkResult struct {
	SubscriberID  *string `json:"subscriberId"`
	Status        int     `json:"status"`
	TransactionID string  `json:"transactionId"`
	Runs          []struct {
		RunID, SubscriberID, Status string
	} `json:"runs"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Field, Problem string
		} `json:"details"`
	} `json:"error"`
}

func bulkResults(t *testing.T, r testherald.Response, n int) []bulkResult {
	t.Helper()
	var b struct{ Results []bulkResult }
	if r.Status != http.StatusOK {
		t.Fatalf("bulk: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &b)
	if len(b.Results) != n {
		t.Fatalf("%d results, want %d: %s", len(b.Results), n, r.Body)
	}
	return b.Results
}

// itemErrorJSON returns the "error" object of item i of a bulk answer,
// re-encoded as errorJSON does.
func itemErrorJSON(t *testing.T, r testherald.Response, i int) string {
	t.Helper()
	var b struct{ Results []json.RawMessage }
	r.JSON(t, &b)
	return errorJSON(t, b.Results[i])
}

// errorJSON returns the "error" object of a body, re-encoded.
func errorJSON(t *testing.T, body []byte) string {
	t.Helper()
	var b struct{ Error json.RawMessage }
	if err := json.Unmarshal(body, &b); err != nil || b.Error == nil {
		t.Fatalf("no error body: %s", body)
	}
	var v any
	_ = json.Unmarshal(b.Error, &v)
	out, _ := json.Marshal(v)
	return string(out)
}

// auditCount counts the tenant's audit events of a type.
func auditCount(t *testing.T, h *testherald.Herald, tenant, typ string) int {
	t.Helper()
	r := h.Do("GET", "/v1/admin/events?tenant="+tenant+"&type="+typ, h.AdminToken(), nil)
	if r.Status != 200 {
		t.Fatalf("audit: %d %s", r.Status, r.Body)
	}
	return bytes.Count(r.Body, []byte("\n"))
}

// TestBulkSubscribers: each item is answered as PUT /v1/subscribers/{id}
// would answer it (201, 200, or its error body), one bad item fails no
// other, the topics are subscribed, the events are on the log, and a
// repeat of the request writes nothing.
func TestBulkSubscribers(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	for _, id := range []string{"b", "c"} {
		if r := h.Do("PUT", sub(id), key, `{"contacts":{"email":["`+id+`@x.io"]}}`); r.Status != 201 {
			t.Fatalf("seed %s: %d", id, r.Status)
		}
	}
	upserts0 := auditCount(t, h, tenant, "SubscriberUpserted")
	body := `{"subscribers":[
		{"subscriberId":"a","contacts":{"email":["a@x.io"]},"locale":"fr","attributes":{"plan":"pro"},"topics":["t1","t2","t1"]},
		{"subscriberId":"b","attributes":{"n":1},"topics":["t1"]},
		{"subscriberId":"c","contacts":{"email":["c@x.io"]}},
		{"subscriberId":"bad","contacts":{"email":["not an address"]},"topics":["t1"]},
		{"subscriberId":"typo","contact":{}},
		5,
		{"subscriberId":"a","topics":["t3"]},
		{"subscriberId":"d","topics":["no spaces"]},
		{"subscriberId":"","contacts":{}},
		{"subscriberId":"e","topics":[` + strings.TrimSuffix(strings.Repeat(`"t",`, 101), ",") + `]}
	]}`
	answer := h.Do("POST", "/v1/subscribers/bulk", key, body)
	res := bulkResults(t, answer, 10)
	wantStatus := []int{201, 200, 200, 422, 422, 422, 422, 422, 422, 422}
	for i, r := range res {
		if r.Status != wantStatus[i] || (r.Status >= 400) != (r.Error != nil) {
			t.Errorf("item %d: %+v, want %d", i, r, wantStatus[i])
		}
	}
	ids := []string{"a", "b", "c", "bad", "typo", "", "a", "d", "", "e"}
	for i, r := range res {
		if i == 5 || i == 8 {
			if r.SubscriberID != nil {
				t.Errorf("item %d (not an object, an invalid id) names %q", i, *r.SubscriberID)
			}
			continue
		}
		if r.SubscriberID == nil || *r.SubscriberID != ids[i] {
			t.Errorf("item %d: subscriberId %v, want %q", i, r.SubscriberID, ids[i])
		}
	}
	field := func(i int) []string {
		var f []string
		if res[i].Error != nil {
			for _, d := range res[i].Error.Details {
				f = append(f, d.Field)
			}
		}
		return f
	}
	for i, want := range map[int][]string{3: {"contacts.email[0]"}, 4: {"contact"}, 5: {"item"}, 6: {"subscriberId"},
		7: {"topics[0]"}, 8: {"subscriberId"}} {
		if got := field(i); !slices.Equal(got, want) {
			t.Errorf("item %d: fields %v, want %v", i, got, want)
		}
	}
	if f := field(9); len(f) == 0 || f[0] != "topics" {
		t.Errorf("item 9 (101 topics): fields %v", f)
	}
	// The validation is the single PUT's: the same error body.
	single := h.Do("PUT", sub("bad"), key, `{"contacts":{"email":["not an address"]}}`)
	if b := itemErrorJSON(t, answer, 3); single.Status != 422 || b != errorJSON(t, single.Body) {
		t.Errorf("bulk item error %s, single PUT %d %s", b, single.Status, single.Body)
	}
	single = h.Do("PUT", sub("typo"), key, `{"contact":{}}`)
	if b := itemErrorJSON(t, answer, 4); b != errorJSON(t, single.Body) {
		t.Errorf("unknown field: bulk %s, single %s", b, single.Body)
	}

	// The subscribers and their subscriptions are there.
	var a subscriberBody
	r := h.Do("GET", sub("a"), key, nil)
	r.JSON(t, &a)
	if r.Status != 200 || a.Contacts["email"][0] != "a@x.io" || *a.Locale != "fr" || a.Attributes["plan"] != "pro" {
		t.Fatalf("a: %d %s", r.Status, r.Body)
	}
	var bb subscriberBody
	h.Do("GET", sub("b"), key, nil).JSON(t, &bb)
	if bb.Contacts["email"][0] != "b@x.io" || bb.Attributes["n"] != float64(1) {
		t.Fatalf("b merged: %+v", bb)
	}
	var subs page[subscribedTopicBody]
	h.Do("GET", sub("a")+"/subscriptions", key, nil).JSON(t, &subs)
	if len(subs.Data) != 2 || subs.Data[0].TopicKey != "t1" || subs.Data[1].TopicKey != "t2" {
		t.Fatalf("a's subscriptions: %+v", subs)
	}
	var t1 topicBody
	h.Do("GET", "/v1/topics/t1", key, nil).JSON(t, &t1)
	if t1.SubscriberCount != 2 {
		t.Fatalf("t1 has %d subscribers, want a and b", t1.SubscriberCount)
	}
	for _, id := range []string{"bad", "typo", "d", "e"} {
		expect(t, h.Do("GET", sub(id), key, nil), 404, "subscriber_not_found")
	}
	// The audit log shows the events: a created, b updated, c unchanged.
	if n := auditCount(t, h, tenant, "SubscriberUpserted") - upserts0; n != 2 {
		t.Errorf("%d SubscriberUpserted events, want 2", n)
	}
	// One subscribe event per topic (t1: a and b; t2: a), none per link.
	if n, m := auditCount(t, h, tenant, "SubscribersSubscribed"), auditCount(t, h, tenant, "SubscriberSubscribed"); n != 2 || m != 0 {
		t.Errorf("%d SubscribersSubscribed and %d SubscriberSubscribed events, want 2 and 0", n, m)
	}
	// A repeat of the request: every good item 200, nothing written.
	res = bulkResults(t, h.Do("POST", "/v1/subscribers/bulk", key, body), 10)
	for i, r := range res[:3] {
		if r.Status != 200 {
			t.Errorf("repeat, item %d: %+v", i, r)
		}
	}
	if n := auditCount(t, h, tenant, "SubscriberUpserted") - upserts0; n != 2 {
		t.Errorf("the repeat wrote: %d SubscriberUpserted events, want 2", n)
	}
	if n := auditCount(t, h, tenant, "SubscribersSubscribed"); n != 2 {
		t.Errorf("the repeat wrote: %d SubscribersSubscribed events, want 2", n)
	}

	// Erasing a subscriber linked by a bulk event unlinks it; its address
	// is gone from the log, and a rebuild from the log is the live
	// projection. It erases b, not a: a topic that only an erased
	// subscriber ever joined (t2, a's alone) is kept empty by the live
	// projection and never made by a rebuild, as with single subscribes.
	if r := h.Do("DELETE", sub("b")+"?erase=true", key, nil); r.Status != 204 {
		t.Fatalf("erase b: %d %s", r.Status, r.Body)
	}
	h.Do("GET", "/v1/topics/t1", key, nil).JSON(t, &t1)
	if t1.SubscriberCount != 1 {
		t.Fatalf("t1 has %d subscribers after b's erasure, want a", t1.SubscriberCount)
	}
	if r := h.Do("GET", "/v1/admin/events?tenant="+tenant, h.AdminToken(), nil); bytes.Contains(r.Body, []byte("b@x.io")) {
		t.Fatalf("the erased address is still on the log: %s", r.Body)
	}
	live, err := h.Store().Checksum()
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := projections.Open(filepath.Join(t.TempDir(), "rebuilt.db"), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	if err := rebuilt.CatchUpTo(context.Background(), h.Log(), h.Store().Applied()); err != nil {
		t.Fatal(err)
	}
	if sum, _ := rebuilt.Checksum(); sum != live {
		t.Fatalf("rebuilt %s, live %s", sum, live)
	}
}

// TestBulkSubscribersDoNotEchoInvalidIDs: an item whose subscriberId is
// invalid (too long, or not printable) is answered without it, as the
// single routes quote no id they refuse; a valid id is still repeated.
func TestBulkSubscribersDoNotEchoInvalidIDs(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	long := "L" + strings.Repeat("o", 5000) + "ng"
	body := `{"subscribers":[{"subscriberId":"` + long + `","contacts":{}},` +
		`{"subscriberId":"` + long + `","contact":{}},` +
		`{"subscriberId":"tab\there"},{"subscriberId":"ok"}]}`
	answer := h.Do("POST", "/v1/subscribers/bulk", key, body)
	res := bulkResults(t, answer, 4)
	for i, r := range res[:3] {
		if r.Status != 422 || r.SubscriberID != nil {
			t.Errorf("item %d: status %d, subscriberId %v; want 422 and none", i, r.Status, r.SubscriberID)
		}
	}
	if bytes.Contains(answer.Body, []byte("Loooo")) || bytes.Contains(answer.Body, []byte("tab\\there")) {
		t.Errorf("the answer repeats an invalid id: %.300s", answer.Body)
	}
	if r := res[3]; r.Status != 201 || r.SubscriberID == nil || *r.SubscriberID != "ok" {
		t.Errorf("valid item: %+v", r)
	}
}

// TestBulkLimits: a bulk request holds 1 to 1,000 subscribers or 1 to 100
// triggers, and its body is bounded.
func TestBulkLimits(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	items := func(n int, item string) string {
		return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
	}
	for _, c := range []struct {
		path, body, field string
	}{
		{"/v1/subscribers/bulk", `{"subscribers":[]}`, "subscribers"},
		{"/v1/subscribers/bulk", `{}`, "subscribers"},
		{"/v1/subscribers/bulk", `{"subscribers":[` + items(1001, `{"subscriberId":"x"}`) + `]}`, "subscribers"},
		{"/v1/subscribers/bulk", `{"subscribers":[{"subscriberId":"x"}],"extra":1}`, "extra"},
		{"/v1/events/bulk", `{"events":[]}`, "events"},
		{"/v1/events/bulk", `{"events":[` + items(101, `{"workflowId":"w"}`) + `]}`, "events"},
	} {
		r := h.Do("POST", c.path, key, c.body)
		if r.Status != 422 || r.ErrorCode() != "validation_failed" || !slices.Contains(problems(t, r), c.field) {
			t.Errorf("%s %.60s: %d %s", c.path, c.body, r.Status, r.Body)
		}
	}
	// 1,000 subscribers is allowed.
	var sb strings.Builder
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"subscriberId":"u%d","contacts":{"email":["u%d@x.io"]},"topics":["all"]}`, i, i)
	}
	res := bulkResults(t, h.Do("POST", "/v1/subscribers/bulk", key, `{"subscribers":[`+sb.String()+`]}`), 1000)
	for i, r := range res {
		if r.Status != 201 {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	var all topicBody
	h.Do("GET", "/v1/topics/all", key, nil).JSON(t, &all)
	if all.SubscriberCount != 1000 {
		t.Fatalf("topic all: %d subscribers", all.SubscriberCount)
	}
	// The body bound (8 MiB), and malformed JSON.
	big := `{"subscribers":[{"subscriberId":"x","attributes":{"a":"` + strings.Repeat("x", 8<<20) + `"}}]}`
	for _, path := range []string{"/v1/subscribers/bulk", "/v1/events/bulk"} {
		if r := h.Do("POST", path, key, big); r.Status != 413 || r.ErrorCode() != "body_too_large" || !strings.Contains(string(r.Body), "8 MiB") {
			t.Errorf("%s, 8 MiB body: %d %.200s", path, r.Status, r.Body)
		}
		if r := h.Do("POST", path, key, `{"subscribers":[`); r.Status != 400 || r.ErrorCode() != "invalid_json" {
			t.Errorf("%s, bad JSON: %d %s", path, r.Status, r.Body)
		}
	}
	// A body of 2 MiB, over the 1 MiB of a single request, is fine.
	attrs := strings.Repeat("y", 60<<10)
	sb.Reset()
	for i := range 35 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"subscriberId":"big%d","attributes":{"a":"%s"}}`, i, attrs)
	}
	bulkResults(t, h.Do("POST", "/v1/subscribers/bulk", key, `{"subscribers":[`+sb.String()+`]}`), 35)
}

// TestBulkEvents: each trigger of a bulk request is answered as POST
// /v1/events would answer it, in order: a repeated transactionId answers
// the first trigger's runs, another request under it is 409, a bad item
// its 422, and one bad item fails no other.
func TestBulkEvents(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	if r := h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "http://127.0.0.1:1/bridge"}); r.Status != http.StatusOK {
		t.Fatalf("bridge: %d %s", r.Status, r.Body)
	}
	for _, id := range []string{"u1", "u2", "u3"} {
		h.Do("PUT", sub(id)+"/subscriptions/news", key, nil)
		h.Do("PUT", sub(id), key, nil)
		if r := h.Do("PUT", sub(id)+"/subscriptions/news", key, nil); r.Status != 201 && r.Status != 200 {
			t.Fatalf("subscribe %s: %d", id, r.Status)
		}
	}
	first := h.Do("POST", "/v1/events", key, `{"workflowId":"w","to":{"subscriberId":"u1"},"transactionId":"t1"}`)
	if first.Status != 202 {
		t.Fatalf("single: %d %s", first.Status, first.Body)
	}
	var firstRes bulkResult
	first.JSON(t, &firstRes)
	badSingle := h.Do("POST", "/v1/events", key, `{"workflowId":"no-dashes","to":{}}`)
	accepted0 := auditCount(t, h, tenant, "TriggerAccepted")
	body := `{"events":[
		{"workflowId":"w","to":{"subscriberId":"u2"},"payload":{"n":1},"transactionId":"t2"},
		{"workflowId":"w","to":{"subscriberId":"u1"},"transactionId":"t1"},
		{"workflowId":"w","to":{"subscriberId":"u3"},"transactionId":"t1"},
		{"workflowId":"no-dashes","to":{}},
		{"workflowId":"w","to":{"topics":["news"]}},
		{"workflowId":"w","to":{"subscriberId":"u1"},"bogus":true},
		[]
	]}`
	answer := h.Do("POST", "/v1/events/bulk", key, body)
	res := bulkResults(t, answer, 7)
	for i, want := range []int{202, 202, 409, 422, 202, 422, 422} {
		if res[i].Status != want || (want >= 400) != (res[i].Error != nil) {
			t.Errorf("item %d: %+v, want %d", i, res[i], want)
		}
	}
	if r := res[0]; r.TransactionID != "t2" || len(r.Runs) != 1 || r.Runs[0].SubscriberID != "u2" || r.Runs[0].Status != "dispatched" {
		t.Errorf("item 0: %+v", r)
	}
	// The repeat of t1 answers the single trigger's runs.
	if r := res[1]; r.TransactionID != "t1" || len(r.Runs) != 1 || r.Runs[0].RunID != firstRes.Runs[0].RunID {
		t.Errorf("repeat of t1: %+v, first %+v", r, firstRes)
	}
	if res[2].Error.Code != "transaction_mismatch" {
		t.Errorf("mismatch: %+v", res[2].Error)
	}
	if b := itemErrorJSON(t, answer, 3); b != errorJSON(t, badSingle.Body) {
		t.Errorf("bad item: bulk %s, single %s", b, badSingle.Body)
	}
	if r := res[4]; !strings.HasPrefix(r.TransactionID, "txn_") || len(r.Runs) != 3 {
		t.Errorf("topic trigger: %+v", r)
	}
	// t2 and the topic trigger were accepted; the repeat and the refused
	// items wrote nothing.
	if n := auditCount(t, h, tenant, "TriggerAccepted") - accepted0; n != 2 {
		t.Errorf("%d TriggerAccepted events, want 2", n)
	}
	r := h.Do("GET", "/v1/runs/"+res[0].Runs[0].RunID, key, nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"transactionId":"t2"`) {
		t.Errorf("run of item 0: %d %s", r.Status, r.Body)
	}
	// Two identical triggers in one request (run side by side): one
	// transaction, the same run in both answers.
	twice := bulkResults(t, h.Do("POST", "/v1/events/bulk", key, `{"events":[
		{"workflowId":"w","to":{"topics":["news"]},"transactionId":"twice"},
		{"workflowId":"w","to":{"topics":["news"]},"transactionId":"twice"}]}`), 2)
	if twice[0].Status != 202 || twice[1].Status != 202 || len(twice[0].Runs) != 3 || len(twice[1].Runs) != 3 {
		t.Fatalf("twice: %+v", twice)
	}
	for k := range 3 {
		if twice[0].Runs[k] != twice[1].Runs[k] || twice[0].Runs[k].Status != "dispatched" {
			t.Errorf("twice, run %d: %+v / %+v", k, twice[0].Runs[k], twice[1].Runs[k])
		}
	}
	accepted0++
	// The whole request again: the transactions with an id answer their
	// first runs.
	again := bulkResults(t, h.Do("POST", "/v1/events/bulk", key, body), 7)
	if again[0].Runs[0].RunID != res[0].Runs[0].RunID || again[1].Runs[0].RunID != firstRes.Runs[0].RunID {
		t.Errorf("repeat: %+v / %+v", again[0], again[1])
	}
	if n := auditCount(t, h, tenant, "TriggerAccepted") - accepted0; n != 3 { // the topic trigger had no id
		t.Errorf("%d TriggerAccepted events after the repeat, want 3", n)
	}
}

// TestBulkSubscribersConcurrentWriters: bulk requests and single PUTs on the
// same subscribers at once (their appends conflict) all succeed, and each
// subscriber ends with one of the values written.
func TestBulkSubscribersConcurrentWriters(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	const ids, writers = 40, 4
	var wg sync.WaitGroup
	errs := make(chan string, 1000)
	for w := range writers {
		wg.Go(func() {
			for round := range 3 {
				var sb strings.Builder
				for i := range ids {
					if i > 0 {
						sb.WriteByte(',')
					}
					fmt.Fprintf(&sb, `{"subscriberId":"s%d","attributes":{"w":%d,"r":%d},"topics":["k%d"]}`, i, w, round, w)
				}
				r := h.Do("POST", "/v1/subscribers/bulk", key, `{"subscribers":[`+sb.String()+`]}`)
				var b struct{ Results []bulkResult }
				_ = json.Unmarshal(r.Body, &b)
				if r.Status != 200 || len(b.Results) != ids {
					errs <- fmt.Sprintf("bulk: %d %s", r.Status, r.Body)
					return
				}
				for _, res := range b.Results {
					if res.Status != 200 && res.Status != 201 {
						errs <- fmt.Sprintf("bulk item: %+v", res)
					}
				}
				if r := h.Do("PUT", sub(fmt.Sprintf("s%d", (w+round)%ids)), key, `{"locale":"en"}`); r.Status != 200 && r.Status != 201 {
					errs <- fmt.Sprintf("single: %d %s", r.Status, r.Body)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for i := range ids {
		var s subscriberBody
		h.Do("GET", sub(fmt.Sprintf("s%d", i)), key, nil).JSON(t, &s)
		if _, ok := s.Attributes["w"]; !ok {
			t.Errorf("s%d: %+v", i, s)
		}
		var subs page[subscribedTopicBody]
		h.Do("GET", sub(fmt.Sprintf("s%d", i))+"/subscriptions", key, nil).JSON(t, &subs)
		if len(subs.Data) != writers {
			t.Errorf("s%d: %d subscriptions, want %d", i, len(subs.Data), writers)
		}
	}
}

// BenchmarkSubscribersBulk measures POST /v1/subscribers/bulk: requests of
// 1,000 new subscribers, each with an email address and two topics (one
// shared by everyone, one of 100), from 4 × GOMAXPROCS clients. One op is
// one subscriber with its subscriptions; every item must answer 201.
func BenchmarkSubscribersBulk(b *testing.B) {
	h := testherald.Start(b, testherald.Options{})
	_, key := h.Tenant("Acme")
	api := h.API(key)
	api.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const per = 1000
	var next atomic.Int64
	cpu0 := cpuTime()
	b.ResetTimer()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		var sb bytes.Buffer
		for pb.Next() {
			// Each op is one subscriber; a client sends its ops a request
			// of up to per at a time.
			sb.Reset()
			sb.WriteString(`{"subscribers":[`)
			n := 0
			for {
				i := next.Add(1)
				if n > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `{"subscriberId":"bulk-%d","contacts":{"email":["bulk-%d@example.com"]},"topics":["everyone","t%d"]}`, i, i, i%100)
				n++
				if n == per || !pb.Next() {
					break
				}
			}
			sb.WriteString(`]}`)
			r, err := api.Send(context.Background(), "POST", "/v1/subscribers/bulk", sb.Bytes())
			if err != nil || r.Status != 200 || bytes.Count(r.Body, []byte(`"status":201`)) != n {
				b.Errorf("bulk of %d: %v %d %.300s", n, err, r.Status, r.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "subscribers/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/subscriber")
}
