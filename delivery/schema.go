package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/qri-io/jsonschema"

	"github.com/heraldhq/herald/apierr"
)

const (
	// schemaDialect is the JSON Schema draft Schema writes and
	// qri-io/jsonschema implements.
	schemaDialect = "https://json-schema.org/draft/2019-09/schema"
	// emailPattern backs "format": "email", which draft 2019-09 treats as an
	// annotation a validator may skip, and which net/mail (behind qri-io's
	// check) reads so loosely that "Ada <ada@example.com>" passes. A sender
	// address must be bare: it becomes the SMTP envelope sender.
	emailPattern = `^[^\s<>@]+@[^\s<>@]+$`
)

// objectSchema and propertySchema are the JSON Schema documents Schema
// writes; their field order is the order of the JSON text.
type objectSchema struct {
	Dialect              string                    `json:"$schema"`
	Title                string                    `json:"title"`
	Type                 string                    `json:"type"`
	Properties           map[string]propertySchema `json:"properties"`
	Required             []string                  `json:"required,omitempty"`
	AdditionalProperties bool                      `json:"additionalProperties"`
}

type propertySchema struct {
	Type       string   `json:"type"`
	Default    any      `json:"default,omitempty"`
	MultipleOf float64  `json:"multipleOf,omitempty"`
	Minimum    *float64 `json:"minimum,omitempty"`
	Maximum    *float64 `json:"maximum,omitempty"`
	MinLength  int      `json:"minLength,omitempty"`
	Format     string   `json:"format,omitempty"`
	Pattern    string   `json:"pattern,omitempty"`
}

// Schema returns the JSON Schema (draft 2019-09) of the entry's config,
// derived from its field list: an object whose properties are the fields,
// typed by Field.Type and narrowed by Field.Check, with the Required fields
// required and no other property allowed. The same entry always yields the
// same bytes.
//
// Schema panics if a field's Default cannot be encoded as JSON: that is a
// mistake in the entry, not in any input.
func (e CatalogEntry) Schema() []byte {
	doc := objectSchema{
		Dialect:    schemaDialect,
		Title:      e.Label,
		Type:       "object",
		Properties: make(map[string]propertySchema, len(e.Fields)),
	}
	for _, f := range e.Fields {
		doc.Properties[f.Name] = f.schema()
		if f.Required {
			doc.Required = append(doc.Required, f.Name)
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("delivery: schema of %q: %v", e.ChannelKey, err))
	}
	return b
}

// schema is the property schema of f: its type plus the checks that fit it.
func (f Field) schema() propertySchema {
	p := propertySchema{Type: f.Type, Default: f.Default}
	switch f.Type {
	case TypeNumber:
		if f.Check.Integer {
			p.MultipleOf = 1
		}
		p.Minimum, p.Maximum = f.Check.Min, f.Check.Max
	case TypeString:
		if f.Check.NonEmpty {
			p.MinLength = 1
		}
		if f.Check.Email {
			p.Format, p.Pattern = "email", emailPattern
		}
		if f.Check.Pattern != "" {
			p.Pattern = f.Check.Pattern
		}
	}
	return p
}

// Validate checks config, the raw JSON of a channel's config, against the
// entry's [CatalogEntry.Schema] and returns one problem per bad field, or nil
// when config is valid. Each problem's Field is "config" for the whole
// object or "config.<name>" for one of its keys; its Problem never quotes
// the submitted value, so a secret cannot leak through it. The problems
// come in field order, then unknown keys in lexical order:
//
//   - config is not a JSON object: one problem on "config";
//   - a required field is missing: "is required";
//   - a key is not a field of the entry: "unknown field";
//   - a field has the wrong JSON type: "must be a string", "must be a
//     number", "must be a boolean" (null is a wrong type too);
//   - a field breaks its Check: "must be an integer", "must be between 1 and
//     65535", "must not be empty", "must be an email address".
//
// The schema, compiled once by github.com/qri-io/jsonschema and reused, is
// the verdict; its errors are mapped to fields by their instance path, and
// the wording comes from the field list. One check is added to it: qri-io
// accepts the strings "true" and "false" for a boolean, Validate does not.
// ctx goes to qri-io, which uses it only to fetch remote $refs; these
// schemas have none.
//
// Validate is safe for concurrent use; it panics if a field's Type is not
// one of the Type constants, a mistake in the entry rather than in config.
func (e CatalogEntry) Validate(ctx context.Context, config []byte) []apierr.FieldProblem {
	var instance any
	if err := json.Unmarshal(config, &instance); err != nil {
		return []apierr.FieldProblem{{Field: "config", Problem: "must be a JSON object"}}
	}
	obj, ok := instance.(map[string]any)
	if !ok {
		return []apierr.FieldProblem{{Field: "config", Problem: "must be a JSON object"}}
	}

	// What the schema refused: keys of obj it found fault with, and whether
	// it refused the object as a whole. qri-io reports required and
	// additionalProperties at the root without a structured field name.
	flagged := map[string]bool{}
	objectFlagged := false
	for _, ke := range validateSchema(ctx, e.Schema(), obj) {
		if name, ok := topKey(ke.PropertyPath); ok {
			flagged[name] = true
		} else {
			objectFlagged = true
		}
	}

	var problems []apierr.FieldProblem
	report := func(name, problem string) {
		problems = append(problems, apierr.FieldProblem{Field: "config." + name, Problem: problem})
	}
	declared := make(map[string]bool, len(e.Fields))
	for _, f := range e.Fields {
		declared[f.Name] = true
		v, present := obj[f.Name]
		switch {
		case !present:
			if f.Required && objectFlagged {
				report(f.Name, "is required")
			}
		case !hasType(v, f.Type):
			report(f.Name, "must be a "+f.Type)
		case flagged[f.Name]:
			report(f.Name, f.Check.describe(v))
		}
	}
	// additionalProperties stops at the first unknown key and names none:
	// name them all from the instance.
	if objectFlagged {
		var unknown []string
		for name := range obj {
			if !declared[name] {
				unknown = append(unknown, name)
			}
		}
		slices.Sort(unknown)
		for _, name := range unknown {
			report(name, "unknown field")
		}
	}
	if len(problems) == 0 && objectFlagged {
		problems = append(problems, apierr.FieldProblem{Field: "config", Problem: "is invalid"})
	}
	return problems
}

// compiled caches the schemas Validate has compiled, by their JSON text (in
// practice one per catalog entry). qri-io/jsonschema is not safe for
// concurrent use: a Schema registers its sub-schemas on its first
// validations, and the package keeps global registries it fills lazily. So
// the mutex serialises every use of the library in this package; a
// validation of a channel config takes microseconds.
var compiled = struct {
	sync.Mutex
	byText map[string]*jsonschema.Schema
}{byText: map[string]*jsonschema.Schema{}}

// validateSchema validates instance against the JSON Schema text schema,
// compiling it on first use, and returns qri-io's errors.
func validateSchema(ctx context.Context, schema []byte, instance map[string]any) []jsonschema.KeyError {
	compiled.Lock()
	defer compiled.Unlock()
	s, ok := compiled.byText[string(schema)]
	if !ok {
		s = new(jsonschema.Schema)
		if err := json.Unmarshal(schema, s); err != nil {
			panic(fmt.Sprintf("delivery: catalog schema does not compile: %v", err))
		}
		compiled.byText[string(schema)] = s
	}
	return *s.Validate(ctx, instance).Errs
}

// topKey returns the first key of a JSON Pointer ("/port" → "port", "/a~1b"
// → "a/b"), or false for the root ("/" as qri-io writes it, or "").
func topKey(pointer string) (string, bool) {
	rest, _ := strings.CutPrefix(pointer, "/")
	if rest == "" {
		return "", false
	}
	token, _, _ := strings.Cut(rest, "/")
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(token), true
}

// hasType reports whether v, decoded by encoding/json, is of the JSON type t.
func hasType(v any, t string) bool {
	switch v.(type) {
	case string:
		return t == TypeString
	case float64:
		return t == TypeNumber
	case bool:
		return t == TypeBoolean
	}
	return false
}

// describe words why the schema refused v, a value of the right type, by
// naming the check of c it breaks.
func (c Check) describe(v any) string {
	switch v := v.(type) {
	case float64:
		if c.Integer && v != math.Trunc(v) {
			return "must be an integer"
		}
		switch {
		case c.Min != nil && c.Max != nil:
			return "must be between " + formatNumber(*c.Min) + " and " + formatNumber(*c.Max)
		case c.Min != nil:
			return "must be at least " + formatNumber(*c.Min)
		case c.Max != nil:
			return "must be at most " + formatNumber(*c.Max)
		}
	case string:
		if c.NonEmpty && v == "" {
			return "must not be empty"
		}
		if c.Email {
			return "must be an email address"
		}
		if c.Pattern != "" {
			return c.Means
		}
	}
	return "is invalid"
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
