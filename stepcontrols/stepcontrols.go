// Package stepcontrols is the pure logic of step controls: the values of
// a workflow step that a tenant's teammates edit per locale, under the
// JSON Schema the step declares. It names locales, and resolves the
// values a run uses from the schema's defaults and the stored layers
// (the default locale, the language, the exact locale), skipping field by
// field a stored value the current schema refuses. It depends on nothing
// of the service but github.com/qri-io/jsonschema.
package stepcontrols

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/qri-io/jsonschema"
)

// qri-io/jsonschema fills its keyword table and registry lazily: filled
// here, before any goroutine can use the library (package control, which
// imports this one, then adds its own keywords).
func init() {
	jsonschema.LoadDraft2019_09()
	jsonschema.GetSchemaRegistry()
}

// DefaultLocale names the tenant's default content, the values set
// without a locale.
const DefaultLocale = "default"

// localeRe is a locale as the service accepts it: a language of two or
// three letters, then optional subtags of letters and digits ("fr",
// "fr-CA", "zh-Hant-TW"); "_" is read as "-".
var localeRe = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$`)

// NormalizeLocale returns locale in its canonical form: the language in
// lower case, a four-letter script in title case, a two-letter region in
// upper case ("FR_ca" → "fr-CA"). ok is false for a locale in a bad shape.
func NormalizeLocale(locale string) (string, bool) {
	l := strings.ReplaceAll(strings.TrimSpace(locale), "_", "-")
	if !localeRe.MatchString(l) {
		return "", false
	}
	parts := strings.Split(l, "-")
	parts[0] = strings.ToLower(parts[0])
	for i := 1; i < len(parts); i++ {
		switch p := parts[i]; {
		case len(p) == 2:
			parts[i] = strings.ToUpper(p)
		case len(p) == 4:
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
		default:
			parts[i] = strings.ToLower(p)
		}
	}
	return strings.Join(parts, "-"), true
}

// Chain returns the layers of values a run of locale reads, in the order
// they apply: DefaultLocale, then the language ("fr"), then the exact
// locale ("fr-CA") when it is not the language alone. A locale in a bad
// shape, or none, reads the default layer only.
func Chain(locale string) []string {
	l, ok := NormalizeLocale(locale)
	if !ok {
		return []string{DefaultLocale}
	}
	lang, _, _ := strings.Cut(l, "-")
	if lang == l {
		return []string{DefaultLocale, lang}
	}
	return []string{DefaultLocale, lang, l}
}

// Schema is a step's control schema, compiled. It is safe for concurrent
// use.
type Schema struct {
	mu       sync.Mutex
	s        *jsonschema.Schema
	defaults map[string]json.RawMessage
	props    map[string]bool
}

// compiled caches schemas by the SHA-256 of their bytes.
var compiled = struct {
	sync.Mutex
	m map[[32]byte]*Schema
}{m: map[[32]byte]*Schema{}}

// maxCompiled bounds the cache.
const maxCompiled = 4096

// Compile compiles raw, a schema of "type":"object" whose properties each
// have a default; an error says what is wrong with it. The sync checks
// what else a schema must be (no remote references, bounded size).
func Compile(raw json.RawMessage) (_ *Schema, err error) {
	sum := sha256.Sum256(raw)
	compiled.Lock()
	cs, ok := compiled.m[sum]
	compiled.Unlock()
	if ok {
		return cs, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("does not compile: %v", r)
		}
	}()
	var shape struct {
		Type       json.RawMessage            `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		return nil, fmt.Errorf("must be a JSON object with an object of properties")
	}
	if string(shape.Type) != `"object"` {
		return nil, fmt.Errorf(`must be of "type": "object"`)
	}
	cs = &Schema{defaults: map[string]json.RawMessage{}, props: map[string]bool{}}
	for name, p := range shape.Properties {
		var prop map[string]json.RawMessage
		if err := json.Unmarshal(p, &prop); err != nil || prop == nil {
			return nil, fmt.Errorf("property %q is not a schema object", name)
		}
		d, ok := prop["default"]
		if !ok {
			return nil, fmt.Errorf("property %q has no default", name)
		}
		cs.defaults[name], cs.props[name] = d, true
	}
	cs.s = new(jsonschema.Schema)
	if err := json.Unmarshal(raw, cs.s); err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	if bad := cs.Refused(cs.Defaults()); len(bad) > 0 {
		return nil, fmt.Errorf("the defaults do not fit the schema: %s", strings.Join(bad, ", "))
	}
	compiled.Lock()
	defer compiled.Unlock()
	if len(compiled.m) >= maxCompiled {
		clear(compiled.m)
	}
	compiled.m[sum] = cs
	return cs, nil
}

// Defaults returns a copy of the schema's defaults, by property.
func (cs *Schema) Defaults() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(cs.defaults))
	for k, v := range cs.defaults {
		out[k] = v
	}
	return out
}

// Has reports whether name is a property of the schema.
func (cs *Schema) Has(name string) bool { return cs.props[name] }

// Refused returns the names of the properties of values the schema
// refuses (sorted; "" for a problem of the object as a whole), none when
// it accepts values.
func (cs *Schema) Refused(values map[string]json.RawMessage) []string {
	raw, err := json.Marshal(values)
	if err != nil {
		return []string{""}
	}
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return []string{""}
	}
	var errs []jsonschema.KeyError
	func() {
		defer func() {
			if recover() != nil {
				errs = []jsonschema.KeyError{{PropertyPath: "/"}}
			}
		}()
		cs.mu.Lock()
		defer cs.mu.Unlock()
		errs = *cs.s.Validate(context.Background(), inst).Errs
	}()
	seen := map[string]bool{}
	var out []string
	for _, ke := range errs {
		name := topProperty(ke)
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// requiredRe is qri-io's message of a missing required property.
var requiredRe = regexp.MustCompile(`^"(.*)" (?:value|property) is required$`)

// topProperty names the top-level property an error is about.
func topProperty(ke jsonschema.KeyError) string {
	p := strings.TrimPrefix(ke.PropertyPath, "/")
	if p == "" {
		if m := requiredRe.FindStringSubmatch(ke.Message); m != nil {
			return m[1]
		}
		return ""
	}
	first, _, _ := strings.Cut(p, "/")
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(first)
}

// Resolve returns the values a run uses: the schema's defaults, then each
// layer's values over them in order (see Chain). A layer's value that is
// not a property of the schema, or that the schema refuses, is skipped,
// field by field: the value under it stays.
func (cs *Schema) Resolve(layers ...map[string]json.RawMessage) map[string]json.RawMessage {
	out := cs.Defaults()
	for _, layer := range layers {
		names := make([]string, 0, len(layer))
		for name := range layer {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !cs.props[name] {
				continue
			}
			prev := out[name]
			out[name] = layer[name]
			if refused(cs.Refused(out), name) {
				out[name] = prev
			}
		}
	}
	return out
}

// refused reports whether names holds name or the whole object ("").
func refused(names []string, name string) bool {
	for _, n := range names {
		if n == name || n == "" {
			return true
		}
	}
	return false
}

// Stored is the values of one step's controls in one locale, as the
// service keeps them (Values a JSON object).
type Stored struct {
	StepID, Locale string
	Values         json.RawMessage
}

// ResolveAll returns the values of each step of schemas (step id →
// schema) for locale: each step's defaults, then the stored layers of
// Chain(locale), a value the schema refuses skipped (see Resolve). Nil
// when schemas is empty; a step whose schema does not compile is left
// out (its Bridge uses its own defaults).
func ResolveAll(schemas map[string]json.RawMessage, stored []Stored, locale string) (map[string]json.RawMessage, error) {
	if len(schemas) == 0 {
		return nil, nil
	}
	byStep := map[string]map[string]map[string]json.RawMessage{} // step → locale → values
	for _, v := range stored {
		var values map[string]json.RawMessage
		if json.Unmarshal(v.Values, &values) != nil {
			continue
		}
		if byStep[v.StepID] == nil {
			byStep[v.StepID] = map[string]map[string]json.RawMessage{}
		}
		byStep[v.StepID][v.Locale] = values
	}
	chain := Chain(locale)
	out := make(map[string]json.RawMessage, len(schemas))
	for step, raw := range schemas {
		cs, err := Compile(raw)
		if err != nil {
			continue
		}
		layers := make([]map[string]json.RawMessage, 0, len(chain))
		for _, l := range chain {
			layers = append(layers, byStep[step][l])
		}
		values, err := json.Marshal(cs.Resolve(layers...))
		if err != nil {
			return nil, err
		}
		out[step] = values
	}
	return out, nil
}

// Skipped returns the names of values (one stored layer) that a run would
// skip under this schema, sorted: a name that is not a property, or a
// value the schema refuses over the defaults.
func (cs *Schema) Skipped(values map[string]json.RawMessage) []string {
	var out []string
	for name, v := range values {
		if !cs.props[name] {
			out = append(out, name)
			continue
		}
		merged := cs.Defaults()
		merged[name] = v
		if refused(cs.Refused(merged), name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
