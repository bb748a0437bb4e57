package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/projections"
)

func TestFieldName(t *testing.T) {
	inst := map[string]any{
		"user":  map[string]any{"email": "x", "tags": []any{"a", map[string]any{"k": 1}}},
		"items": []any{map[string]any{"sku": "1"}},
		"0":     map[string]any{"1": true},
		"a.b":   1,
	}
	cases := []struct {
		tokens []string
		want   string
	}{
		{nil, "payload"},
		{[]string{"user"}, "payload.user"},
		{[]string{"user", "email"}, "payload.user.email"},
		{[]string{"user", "tags", "1", "k"}, "payload.user.tags[1].k"},
		{[]string{"items", "0", "sku"}, "payload.items[0].sku"},
		// An object's key "0" is a key, not an index.
		{[]string{"0", "1"}, `payload["0"]["1"]`},
		{[]string{"a.b"}, `payload["a.b"]`},
		{[]string{"we ird", "x"}, `payload["we ird"].x`},
		{[]string{`q"<`}, `payload["q\"<"]`},
		{[]string{"_ok9"}, "payload._ok9"},
		// A missing value (a required key) keeps the key form.
		{[]string{"user", "missing", "deeper"}, "payload.user.missing.deeper"},
		// An index out of range of an array is written as a key.
		{[]string{"items", "7"}, `payload.items["7"]`},
	}
	for _, c := range cases {
		if got := fieldName(inst, c.tokens); got != c.want {
			t.Errorf("fieldName(%q) = %s; want %s", c.tokens, got, c.want)
		}
	}
}

func TestPointerTokens(t *testing.T) {
	cases := map[string][]string{"": nil, "/": nil, "/a": {"a"}, "/a/0/b~1c/d~0e": {"a", "0", "b/c", "d~e"}}
	for in, want := range cases {
		if got := pointerTokens(in); !slices.Equal(got, want) {
			t.Errorf("pointerTokens(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestCheckPayloadSchema(t *testing.T) {
	// A chain of $defs each referring to the next twice: 2^n schemas once
	// expanded, from a few hundred bytes.
	var defs []string
	for i := range 20 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d20":{"type":"string"}`)
	exponential := `{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`

	cases := []struct {
		name, schema, want string // want: a part of the problem; "" for none
	}{
		{"object", `{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`, ""},
		{"empty", `{}`, ""},
		{"local refs", `{"properties":{"a":{"$ref":"#/$defs/s"},"b":{"items":[{"$ref":"#/$defs/s"}]}},"$defs":{"s":{"type":"string"}}}`, ""},
		{"ref to a property", `{"properties":{"a":{"type":"string"},"b":{"$ref":"#/properties/a"}}}`, ""},
		{"data that looks like keywords", `{"enum":[{"$id":"x","$ref":"http://x"}],"properties":{"$ref":{"const":{"$id":1}}}}`, ""},
		{"dialect", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`, ""},
		{"array", `[]`, "must be a JSON object"},
		{"boolean root", `true`, "must be a JSON object"},
		{"not JSON", `{`, "is not JSON"},
		{"too big", `{"description":"` + strings.Repeat("x", MaxPayloadSchemaBytes) + `"}`, "is over 65536 bytes"},
		{"remote ref", `{"properties":{"a":{"$ref":"http://169.254.169.254/latest"}}}`, "#/properties/a/$ref must point into this document"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "must point into this document"},
		{"relative ref", `{"$ref":"other.json#/x"}`, "must point into this document"},
		{"id", `{"$id":"https://example.com/s","type":"object"}`, "# uses $id"},
		{"nested anchor", `{"$defs":{"a":{"$anchor":"x"}}}`, "#/$defs/a uses $anchor"},
		{"recursive ref", `{"$recursiveRef":"#"}`, "uses $recursiveRef"},
		{"dangling ref", `{"$ref":"#/$defs/nope"}`, `"#/$defs/nope" names no schema`},
		{"definitions", `{"$ref":"#/definitions/a","definitions":{"a":{}}}`, "definitions go under $defs"},
		{"ref to itself", `{"$ref":"#"}`, "cycle of references"},
		{"ref to an ancestor", `{"properties":{"a":{"allOf":[{"$ref":"#/properties/a"}]}}}`, "cycle of references"},
		{"mutual refs", `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"not":{"$ref":"#/$defs/a"}}}}`, "cycle of references"},
		{"exponential", exponential, "more than 10000 schemas"},
		{"bad pattern", `{"properties":{"a":{"pattern":"("}}}`, "does not compile"},
		{"bad type", `{"type":5}`, "does not compile"},
		{"not a schema", `{"properties":{"a":5}}`, "#/properties/a must be a schema"},
	}
	for _, c := range cases {
		got := checkPayloadSchema(json.RawMessage(c.schema))
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: checkPayloadSchema = %q; want %q", c.name, got, c.want)
		}
	}
}

func TestCheckPayload(t *testing.T) {
	schema := `{"type":"object","required":["orderId","user"],"additionalProperties":true,
		"properties":{
			"orderId":{"type":"string","pattern":"^ord_[0-9]+$"},
			"total":{"type":"number","minimum":0,"exclusiveMaximum":1000},
			"user":{"type":"object","required":["email"],"properties":{"email":{"type":"string","format":"email","maxLength":10}}},
			"items":{"type":"array","items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string","minLength":3}}}},
			"strict":{"type":"object","properties":{"a":{}},"additionalProperties":false},
			"a.b":{"type":"integer"}}}`
	cs, err := compileSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, payload string
		want          []apierr.FieldProblem
	}{
		{"valid", `{"orderId":"ord_1","user":{"email":"a@b.co"},"items":[{"sku":"abc"}]}`, nil},
		{"missing", `{}`, []apierr.FieldProblem{
			{Field: "payload.orderId", Problem: "is required"}, {Field: "payload.user", Problem: "is required"}}},
		{"nested", `{"orderId":"x-secret","total":1000,"user":{"email":"not-an-email-at-all"},"items":[{"sku":"abc"},{"sku":"a"},{}],"strict":{"a":1,"b":2},"a.b":1.5}`,
			[]apierr.FieldProblem{
				{Field: "payload.items[1].sku", Problem: "must be at least 3 characters"},
				{Field: "payload.items[2].sku", Problem: "is required"},
				{Field: "payload.orderId", Problem: "must match the pattern ^ord_[0-9]+$"},
				{Field: "payload.strict", Problem: "has a property the schema does not allow"},
				{Field: "payload.total", Problem: "must be less than 1000"},
				{Field: "payload.user.email", Problem: "must be a valid email"},
				{Field: "payload.user.email", Problem: "must be at most 10 characters"},
				{Field: `payload["a.b"]`, Problem: "must be of type integer, not number"},
			}},
		{"wrong type", `{"orderId":1,"user":[]}`, []apierr.FieldProblem{
			{Field: "payload.orderId", Problem: "must be of type string, not integer"},
			{Field: "payload.user", Problem: "must be of type object, not array"}}},
	}
	for _, c := range cases {
		got := cs.check(context.Background(), json.RawMessage(c.payload))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v\nwant %v", c.name, got, c.want)
		}
		for _, p := range got {
			if strings.Contains(p.Problem, "secret") || strings.Contains(p.Problem, "not-an-email") {
				t.Errorf("%s: a problem quotes the submitted value: %v", c.name, p)
			}
		}
	}
}

// A schema that refers to a remote document is refused at the sync, so
// qri-io never fetches it: nothing is asked of the server the $ref names.
func TestPayloadSchemaNeverFetches(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	if msg := checkPayloadSchema(json.RawMessage(`{"properties":{"a":{"$ref":"` + srv.URL + `/s.json"}}}`)); msg == "" {
		t.Fatal("a remote $ref was accepted")
	}
	if hits.Load() != 0 {
		t.Fatalf("the remote schema was fetched %d times", hits.Load())
	}
}

// Checks of one compiled schema run concurrently (-race): qri-io mutates
// a schema during its validations, so they take turns.
func TestCheckPayloadConcurrently(t *testing.T) {
	ws := projections.WorkflowSchema{Digest: t.Name(), Schema: json.RawMessage(
		`{"properties":{"a":{"$ref":"#/$defs/s"},"b":{"items":{"$ref":"#/$defs/s"}}},"$defs":{"s":{"type":"string"}}}`)}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				cs := schemaOf(ws, nil)
				payload := `{"a":"x","b":["y"]}`
				want := 0
				if (g+i)%2 == 1 {
					payload, want = `{"a":1,"b":["y",2]}`, 2
				}
				if got := cs.check(context.Background(), json.RawMessage(payload)); len(got) != want {
					t.Errorf("%s: %v; want %d problems", payload, got, want)
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkCheckPayload is the check a trigger of a workflow with a
// schema adds: the compiled schema from the cache, a 200-byte payload
// validated against the schema of TestPayloadSchemaEnforcedAtTriggerE2E.
func BenchmarkCheckPayload(b *testing.B) {
	ws := projections.WorkflowSchema{Digest: b.Name(), Schema: json.RawMessage(`{"type":"object","required":["orderId","items"],
		"properties":{"orderId":{"type":"string"},"items":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/item"}}},
		"$defs":{"item":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}}}`)}
	payload := json.RawMessage(`{"orderId":"ord_0123456789","items":[{"sku":"sku-1","qty":2},{"sku":"sku-2","qty":1},{"sku":"sku-3","qty":5}],"note":"leave it at the door, please: the bell is broken"}`)
	for b.Loop() {
		if p := schemaOf(ws, nil).check(context.Background(), payload); len(p) > 0 {
			b.Fatal(p)
		}
	}
}

// uniqueItems is herald's own: one pass over the items (qri-io's compares
// every pair), items equal as JSON values, and false allows repeats.
func TestCheckPayloadUniqueItems(t *testing.T) {
	cs, err := compileSchema(json.RawMessage(`{"properties":{"tags":{"uniqueItems":true},"any":{"uniqueItems":false}}}`))
	if err != nil {
		t.Fatal(err)
	}
	big := make([]string, 60000)
	for i := range big {
		big[i] = strconv.Itoa(i)
	}
	cases := []struct {
		payload string
		want    []apierr.FieldProblem
	}{
		{`{"tags":["a","b"],"any":[1,1]}`, nil},
		{`{"tags":["a","b","a"]}`, []apierr.FieldProblem{{Field: "payload.tags", Problem: "must not repeat an item"}}},
		{`{"tags":[{"a":1,"b":[2]},{"b":[2],"a":1.0}]}`, []apierr.FieldProblem{{Field: "payload.tags", Problem: "must not repeat an item"}}},
		{`{"tags":[1,"1",true,null,{}]}`, nil},
		// 60,000 items: n² comparisons would take minutes.
		{`{"tags":[` + strings.Join(big, ",") + `]}`, nil},
	}
	for _, c := range cases {
		if got := cs.check(context.Background(), json.RawMessage(c.payload)); !slices.Equal(got, c.want) {
			t.Errorf("%.60s: %v; want %v", c.payload, got, c.want)
		}
	}
}

// A payload whose values times the schema's size is over
// MaxPayloadCheckWork is refused without being checked.
func TestCheckPayloadWorkBound(t *testing.T) {
	var props []string
	for i := range 999 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string"}`, i))
	}
	cs, err := compileSchema(json.RawMessage(`{"properties":{"items":{"items":{"properties":{` + strings.Join(props, ",") + `}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cs.size != 1002 {
		t.Fatalf("size %d, want 1002", cs.size)
	}
	items := func(n int) string {
		return `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"p1":"x"},`, n), ",") + `]}`
	}
	// 1 + 1 + 2,000 × 2 values = 4,002 values × 1,002 schemas: over.
	got := cs.check(context.Background(), json.RawMessage(items(2000)))
	if len(got) != 1 || got[0].Field != "payload" || !strings.Contains(got[0].Problem, "too large to check") {
		t.Fatalf("over the bound: %v", got)
	}
	// 1,000 values × 1,002 schemas: under.
	if got := cs.check(context.Background(), json.RawMessage(items(499))); len(got) != 0 {
		t.Fatalf("under the bound: %v", got)
	}
}
