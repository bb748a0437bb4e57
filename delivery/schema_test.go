package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/apierr"
)

func emailSMTP(t *testing.T) CatalogEntry {
	t.Helper()
	e, ok := LookupChannel("email-smtp")
	if !ok {
		t.Fatal("email-smtp is not in the catalog")
	}
	return e
}

func TestSchemaOfEmailSMTP(t *testing.T) {
	const want = `{"$schema":"https://json-schema.org/draft/2019-09/schema","title":"Email (SMTP)","type":"object",` +
		`"properties":{` +
		`"allowInsecureAuth":{"type":"boolean","default":false},` +
		`"fromEmail":{"type":"string","format":"email","pattern":"^[^\\s\u003c\u003e@]+@[^\\s\u003c\u003e@]+$"},` +
		`"fromName":{"type":"string"},` +
		`"host":{"type":"string","minLength":1},` +
		`"password":{"type":"string"},` +
		`"port":{"type":"number","multipleOf":1,"minimum":1,"maximum":65535},` +
		`"secure":{"type":"boolean","default":false},` +
		`"username":{"type":"string"}},` +
		`"required":["host","port","fromEmail"],"additionalProperties":false}`
	if got := string(emailSMTP(t).Schema()); got != want {
		t.Fatalf("Schema\n got %s\nwant %s", got, want)
	}
}

func TestSchemaFollowsFields(t *testing.T) {
	e := CatalogEntry{ChannelKey: "test", Label: "Test", Fields: []Field{
		{Name: "n", Type: TypeNumber, Check: Check{Min: new(0.5), NonEmpty: true, Email: true}},   // string checks ignored
		{Name: "s", Type: TypeString, Required: true, Check: Check{Integer: true, Max: new(3.0)}}, // number checks ignored
	}}
	var doc map[string]any
	if err := json.Unmarshal(e.Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	props := doc["properties"].(map[string]any)
	if got := fmt.Sprint(props["n"]); got != "map[minimum:0.5 type:number]" {
		t.Errorf("n = %s", got)
	}
	if got := fmt.Sprint(props["s"]); got != "map[type:string]" {
		t.Errorf("s = %s", got)
	}
	if got := fmt.Sprint(doc["required"]); got != "[s]" {
		t.Errorf("required = %s", got)
	}

	noneRequired := CatalogEntry{Fields: []Field{{Name: "x", Type: TypeBoolean}}}
	if strings.Contains(string(noneRequired.Schema()), "required") {
		t.Errorf("schema without required fields has a required list: %s", noneRequired.Schema())
	}
}

func TestValidate(t *testing.T) {
	const minimal = `"host":"smtp.example.com","port":587,"fromEmail":"ada@example.com"`
	p := func(field, problem string) apierr.FieldProblem {
		return apierr.FieldProblem{Field: field, Problem: problem}
	}
	tests := []struct {
		name   string
		config string
		want   []apierr.FieldProblem
	}{
		{"minimal", `{` + minimal + `}`, nil},
		{"every field", `{` + minimal + `,"secure":true,"username":"ada","password":"hunter2","fromName":"Ada"}`, nil},
		{"port 465 secure", `{"host":"h","port":465,"secure":true,"fromEmail":"a@b"}`, nil},
		{"port as float that is whole", `{"host":"h","port":1025.0,"fromEmail":"a@b"}`, nil},
		{"empty optional strings", `{` + minimal + `,"username":"","password":"","fromName":""}`, nil},

		{"not JSON", `{`, []apierr.FieldProblem{p("config", "must be a JSON object")}},
		{"array", `[]`, []apierr.FieldProblem{p("config", "must be a JSON object")}},
		{"null", `null`, []apierr.FieldProblem{p("config", "must be a JSON object")}},
		{"string", `"x"`, []apierr.FieldProblem{p("config", "must be a JSON object")}},
		{"number", `42`, []apierr.FieldProblem{p("config", "must be a JSON object")}},

		{"empty object", `{}`, []apierr.FieldProblem{p("config.host", "is required"), p("config.port", "is required"), p("config.fromEmail", "is required")}},
		{"missing host", `{"port":587,"fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.host", "is required")}},
		{"missing fromEmail", `{"host":"h","port":587}`, []apierr.FieldProblem{p("config.fromEmail", "is required")}},

		{"unknown field", `{` + minimal + `,"bogus":1}`, []apierr.FieldProblem{p("config.bogus", "unknown field")}},
		{"unknown fields, each named, sorted", `{` + minimal + `,"zeta":1,"alpha":{},"a/b":null}`,
			[]apierr.FieldProblem{p("config.a/b", "unknown field"), p("config.alpha", "unknown field"), p("config.zeta", "unknown field")}},
		{"names are case-sensitive", `{"Host":"h","port":587,"fromEmail":"a@b"}`,
			[]apierr.FieldProblem{p("config.host", "is required"), p("config.Host", "unknown field")}},

		{"port as string", `{"host":"h","port":"587","fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.port", "must be a number")}},
		{"port null", `{"host":"h","port":null,"fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.port", "must be a number")}},
		{"host as number", `{"host":1,"port":587,"fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.host", "must be a string")}},
		{"secure as string true", `{` + minimal + `,"secure":"true"}`, []apierr.FieldProblem{p("config.secure", "must be a boolean")}},
		{"secure as number", `{` + minimal + `,"secure":1}`, []apierr.FieldProblem{p("config.secure", "must be a boolean")}},
		{"username null", `{` + minimal + `,"username":null}`, []apierr.FieldProblem{p("config.username", "must be a string")}},
		{"password as object", `{` + minimal + `,"password":{"p":"hunter2"}}`, []apierr.FieldProblem{p("config.password", "must be a string")}},
		{"fromName as array", `{` + minimal + `,"fromName":["Ada"]}`, []apierr.FieldProblem{p("config.fromName", "must be a string")}},

		{"port fractional", `{"host":"h","port":587.5,"fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.port", "must be an integer")}},
		{"port 0", `{"host":"h","port":0,"fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.port", "must be between 1 and 65535")}},
		{"port negative", `{"host":"h","port":-25,"fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.port", "must be between 1 and 65535")}},
		{"port 65536", `{"host":"h","port":65536,"fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.port", "must be between 1 and 65535")}},
		{"port bounds are inclusive", `{"host":"h","port":65535,"fromEmail":"a@b"}`, nil},
		{"host empty", `{"host":"","port":587,"fromEmail":"a@b"}`, []apierr.FieldProblem{p("config.host", "must not be empty")}},
		{"fromEmail not an address", `{"host":"h","port":587,"fromEmail":"ada"}`, []apierr.FieldProblem{p("config.fromEmail", "must be an email address")}},
		{"fromEmail empty", `{"host":"h","port":587,"fromEmail":""}`, []apierr.FieldProblem{p("config.fromEmail", "must be an email address")}},
		{"fromEmail with display name", `{"host":"h","port":587,"fromEmail":"Ada <ada@example.com>"}`, []apierr.FieldProblem{p("config.fromEmail", "must be an email address")}},
		{"fromEmail with spaces", `{"host":"h","port":587,"fromEmail":"ada @example.com"}`, []apierr.FieldProblem{p("config.fromEmail", "must be an email address")}},

		{"every problem at once, in field order",
			`{"port":"587","secure":"yes","password":5,"fromEmail":"nope","extra":true}`,
			[]apierr.FieldProblem{
				p("config.host", "is required"),
				p("config.port", "must be a number"),
				p("config.secure", "must be a boolean"),
				p("config.password", "must be a string"),
				p("config.fromEmail", "must be an email address"),
				p("config.extra", "unknown field"),
			}},
	}
	e := emailSMTP(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.Validate(context.Background(), []byte(tt.config))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Validate(%s)\n got %v\nwant %v", tt.config, got, tt.want)
			}
		})
	}
}

func TestValidateNeverQuotesValues(t *testing.T) {
	const secret = "s3cr3t-value"
	configs := []string{
		`{"host":"h","port":587,"fromEmail":"a@b","password":["` + secret + `"]}`,
		`{"host":"h","port":587,"fromEmail":"` + secret + `"}`,
		`{"host":"h","port":587,"fromEmail":"a@b","` + secret + `x":"` + secret + `"}`,
	}
	for _, config := range configs {
		problems := emailSMTP(t).Validate(context.Background(), []byte(config))
		if len(problems) == 0 {
			t.Fatalf("Validate(%s) found nothing", config)
		}
		for _, pr := range problems {
			if strings.Contains(pr.Problem, secret) {
				t.Fatalf("problem %+v quotes the value", pr)
			}
		}
	}
}

func TestValidateOtherChecks(t *testing.T) {
	e := CatalogEntry{ChannelKey: "test", Fields: []Field{
		{Name: "min", Type: TypeNumber, Check: Check{Min: new(10.0)}},
		{Name: "max", Type: TypeNumber, Check: Check{Max: new(2.5)}},
	}}
	got := e.Validate(context.Background(), []byte(`{"min":9.5,"max":3}`))
	want := []apierr.FieldProblem{{Field: "config.min", Problem: "must be at least 10"}, {Field: "config.max", Problem: "must be at most 2.5"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Validate = %v; want %v", got, want)
	}
	if got := e.Validate(context.Background(), []byte(`{"min":10,"max":2.5}`)); got != nil {
		t.Fatalf("bounds are inclusive, got %v", got)
	}
	if got := (Check{}).describe("x"); got != "is invalid" {
		t.Fatalf("describe without a matching check = %q", got)
	}
}

func TestSchemaPanicsOnBadDefault(t *testing.T) {
	e := CatalogEntry{ChannelKey: "broken", Fields: []Field{{Name: "x", Type: TypeString, Default: func() {}}}}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `"broken"`) {
			t.Fatalf("Schema with an unencodable default: recover() = %v; want a panic naming the entry", r)
		}
	}()
	e.Schema()
}

func TestValidatePanicsOnBadEntry(t *testing.T) {
	e := CatalogEntry{ChannelKey: "broken", Fields: []Field{{Name: "x", Type: "strng"}}}
	defer func() {
		if recover() == nil {
			t.Fatal("Validate with an unknown field type did not panic")
		}
	}()
	e.Validate(context.Background(), []byte(`{"x":"y"}`))
}

// TestValidateConcurrently fails under -race without the mutex around
// qri-io/jsonschema, which mutates a Schema during its first validations. The
// label makes the schema text unique, so this test compiles its own schema
// and the goroutines meet it cold.
func TestValidateConcurrently(t *testing.T) {
	e := emailSMTP(t)
	e.Label = t.Name()
	cases := []struct {
		config string
		want   []apierr.FieldProblem
	}{
		{`{"host":"h","port":587,"fromEmail":"a@b"}`, nil},
		{`{"host":"h","port":"587","fromEmail":"a@b","secure":false,"username":"u"}`, []apierr.FieldProblem{{Field: "config.port", Problem: "must be a number"}}},
		{`{"port":0,"bogus":1,"fromName":"n","password":"p"}`, []apierr.FieldProblem{
			{Field: "config.host", Problem: "is required"}, {Field: "config.port", Problem: "must be between 1 and 65535"},
			{Field: "config.fromEmail", Problem: "is required"}, {Field: "config.bogus", Problem: "unknown field"},
		}},
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			<-start
			for i := range 20 {
				c := cases[(g+i)%len(cases)]
				if got := e.Validate(context.Background(), []byte(c.config)); !slices.Equal(got, c.want) {
					t.Errorf("Validate(%s) = %v; want %v", c.config, got, c.want)
				}
			}
		})
	}
	close(start)
	wg.Wait()
}
