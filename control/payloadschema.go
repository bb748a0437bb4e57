package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	jptr "github.com/qri-io/jsonpointer"
	"github.com/qri-io/jsonschema"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/projections"
)

// Bounds of a workflow's payload schema (its discovered payloadSchema, a
// JSON Schema of draft 2019-09 checked by github.com/qri-io/jsonschema).
const (
	// MaxPayloadSchemaBytes bounds a payloadSchema as a Bridge reports it.
	MaxPayloadSchemaBytes = 64 << 10
	// MaxPayloadSchemaNodes bounds the schemas a payloadSchema holds once
	// each $ref is counted as the schema it points to: the work of a check
	// per value of the payload. Without it a few $defs each referring to
	// the next twice would cost 2^n.
	MaxPayloadSchemaNodes = 10_000
	// MaxPayloadCheckWork bounds a trigger's check: the payload's values
	// times the schema's size (MaxPayloadSchemaNodes' count) is at most
	// this, a bound of the schemas the validator applies.
	MaxPayloadCheckWork = 4_000_000
	// maxPayloadProblems bounds the problems a refused payload names.
	maxPayloadProblems = 100
	// maxCompiledSchemas bounds the compiled schemas kept in memory.
	maxCompiledSchemas = 4096
)

// qri-io/jsonschema fills two global tables lazily: its keyword table on
// the first schema it decodes, and its registry of schemas by URI. Filled
// here, before any goroutine can use the library, they are only read
// afterwards: payload schemas are refused $id (the only road to a write
// into the registry), and delivery's catalog schemas have none.
func init() {
	jsonschema.LoadDraft2019_09()
	jsonschema.GetSchemaRegistry()
	jsonschema.RegisterKeyword("uniqueItems", func() jsonschema.Keyword { return new(uniqueItems) })
}

// uniqueItems replaces qri-io's uniqueItems keyword, which compares every
// pair of items (a 256 KiB payload array would take minutes) and refuses
// repeated items even for "uniqueItems": false. Items are equal when their
// JSON encodings are (encoding/json sorts object keys; numbers are
// float64): one pass.
type uniqueItems bool

func (u *uniqueItems) Register(string, *jsonschema.SchemaRegistry) {}

func (u *uniqueItems) Resolve(jptr.Pointer, string) *jsonschema.Schema { return nil }

func (u *uniqueItems) ValidateKeyword(_ context.Context, st *jsonschema.ValidationState, data any) {
	arr, ok := data.([]any)
	if !bool(*u) || !ok {
		return
	}
	seen := make(map[string]bool, len(arr))
	for _, item := range arr {
		k, err := json.Marshal(item)
		if err != nil {
			continue
		}
		if seen[string(k)] {
			st.AddError(data, "array items must be unique")
			return
		}
		seen[string(k)] = true
	}
}

// Keywords of a schema whose values are schemas; every other keyword's
// value is data (enum, const, default, examples…) and is not walked.
var (
	schemaMapKeywords   = []string{"properties", "patternProperties", "$defs", "dependentSchemas"}
	schemaOneKeywords   = []string{"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems", "contains", "propertyNames", "not", "if", "then", "else"}
	schemaArrayKeywords = []string{"allOf", "anyOf", "oneOf"}
	// refusedKeywords name or find schemas by URI: qri-io would fetch
	// such a URI over HTTP or read it from a file, and keeps what it names
	// in a registry every tenant shares.
	refusedKeywords = []string{"$id", "$anchor", "$recursiveRef", "$recursiveAnchor"}
)

// schemaDoc is a payloadSchema decoded for its checks: the pointer of each
// schema it holds ("#", "#/properties/a"…), the $refs found under each, and
// its schema count.
type schemaDoc struct {
	nodes map[string]bool
	// refs maps a schema's pointer to the targets of the $refs in its
	// subtree, itself included.
	refs map[string][]string
	// under maps a schema's pointer to the count of schemas in its
	// subtree.
	under map[string]int
}

// checkPayloadSchema checks a workflow's payloadSchema at a sync and
// returns what is wrong with it, or "" when it will be enforced at
// trigger: a JSON object of at most MaxPayloadSchemaBytes that
// qri-io/jsonschema compiles, without $id, $anchor, $recursiveRef or
// $recursiveAnchor, whose every $ref is a JSON pointer into the schema
// itself ("#/$defs/address") naming a schema, with no cycle of $refs (a
// recursive schema), and no more than MaxPayloadSchemaNodes schemas with
// each $ref expanded.
func checkPayloadSchema(raw json.RawMessage) string {
	if len(raw) > MaxPayloadSchemaBytes {
		return fmt.Sprintf("is over %d bytes", MaxPayloadSchemaBytes)
	}
	if _, msg := schemaSize(raw); msg != "" {
		return msg
	}
	if _, err := compileSchema(raw); err != nil {
		return err.Error()
	}
	return ""
}

// schemaSize returns the schemas raw holds with each $ref counted as the
// schema it names, or what is refused in it.
func schemaSize(raw json.RawMessage) (int, string) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, "is not JSON"
	}
	root, ok := v.(map[string]any)
	if !ok {
		return 0, "must be a JSON object"
	}
	doc := schemaDoc{nodes: map[string]bool{}, refs: map[string][]string{}, under: map[string]int{}}
	if msg := doc.walk(root, "#"); msg != "" {
		return 0, msg
	}
	for _, targets := range doc.refs {
		for _, t := range targets {
			if !doc.nodes[t] {
				return 0, fmt.Sprintf("$ref %q names no schema of this document (definitions go under $defs)", t)
			}
		}
	}
	return doc.expand()
}

// walk records the schema v at pointer p and the schemas under it, and
// returns what is refused in them, or "".
func (d *schemaDoc) walk(v any, p string) string {
	d.nodes[p] = true
	d.under[p] = 1
	obj, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return ""
		}
		return fmt.Sprintf("%s must be a schema (an object or a boolean)", p)
	}
	for _, k := range refusedKeywords {
		if _, ok := obj[k]; ok {
			return fmt.Sprintf("%s uses %s, which herald does not support: refer to schemas of this document with $ref \"#/$defs/…\"", p, k)
		}
	}
	if r, ok := obj["$ref"]; ok {
		s, isString := r.(string)
		if !isString || (s != "#" && !strings.HasPrefix(s, "#/")) {
			return fmt.Sprintf("%s/$ref must point into this document (\"#/$defs/…\")", p)
		}
		d.refs[p] = append(d.refs[p], s)
	}
	var children []string
	sub := func(child any, cp string) string {
		if msg := d.walk(child, cp); msg != "" {
			return msg
		}
		children = append(children, cp)
		return ""
	}
	for _, k := range schemaMapKeywords {
		if m, ok := obj[k].(map[string]any); ok {
			for name, child := range m {
				if msg := sub(child, p+"/"+pointerToken(k)+"/"+pointerToken(name)); msg != "" {
					return msg
				}
			}
		}
	}
	for _, k := range schemaOneKeywords {
		if child, ok := obj[k]; ok {
			if msg := sub(child, p+"/"+k); msg != "" {
				return msg
			}
		}
	}
	arrays := append(slices.Clone(schemaArrayKeywords), "items")
	for _, k := range arrays {
		child, ok := obj[k]
		if !ok {
			continue
		}
		if list, ok := child.([]any); ok {
			for i, c := range list {
				if msg := sub(c, p+"/"+k+"/"+strconv.Itoa(i)); msg != "" {
					return msg
				}
			}
		} else if k == "items" {
			if msg := sub(child, p+"/items"); msg != "" {
				return msg
			}
		}
	}
	for _, c := range children {
		d.refs[p] = append(d.refs[p], d.refs[c]...)
		d.under[p] += d.under[c]
	}
	return ""
}

// expand returns the schema's size once each $ref counts as the schema it
// points to; it refuses a cycle of $refs and a size over
// MaxPayloadSchemaNodes.
func (d *schemaDoc) expand() (int, string) {
	const (
		visiting = -1
		over     = MaxPayloadSchemaNodes + 1
	)
	size := map[string]int{}
	var visit func(p string) (int, string)
	visit = func(p string) (int, string) {
		switch n, seen := size[p]; {
		case seen && n == visiting:
			return 0, fmt.Sprintf("$ref %q is part of a cycle of references: recursive schemas are not supported", p)
		case seen:
			return n, ""
		}
		size[p] = visiting
		n := d.under[p]
		for _, t := range d.refs[p] {
			tn, msg := visit(t)
			if msg != "" {
				return 0, msg
			}
			n = min(n+tn, over)
		}
		size[p] = n
		return n, ""
	}
	n, msg := visit("#")
	if msg != "" {
		return 0, msg
	}
	if n > MaxPayloadSchemaNodes {
		return 0, fmt.Sprintf("holds more than %d schemas once its $refs are expanded", MaxPayloadSchemaNodes)
	}
	return n, ""
}

func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// compiledSchema is a payload schema ready to check payloads. A
// jsonschema.Schema is not safe for concurrent use (it resolves its
// $refs and registers its sub-schemas during its first validations), so
// its checks take turns; one takes microseconds.
type compiledSchema struct {
	mu     sync.Mutex
	schema *jsonschema.Schema
	// size is the schema's count with its $refs expanded (schemaSize).
	size int
}

// compileSchema decodes raw into a qri-io schema and validates an empty
// object with it once; either failing (a panic included) is an error.
func compileSchema(raw json.RawMessage) (cs *compiledSchema, err error) {
	defer func() {
		if r := recover(); r != nil {
			cs, err = nil, fmt.Errorf("does not compile: %v", r)
		}
	}()
	size, msg := schemaSize(raw)
	if msg != "" {
		return nil, errors.New(msg)
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	s.Validate(context.Background(), map[string]any{})
	return &compiledSchema{schema: s, size: size}, nil
}

// compiled caches compiled payload schemas by their digest (the hex
// SHA-256 the projection keeps): each version of a schema is compiled
// once per process. A schema that did not compile is kept as nil.
var compiled = struct {
	sync.Mutex
	byDigest map[string]*compiledSchema
}{byDigest: map[string]*compiledSchema{}}

// schemaOf returns ws compiled, from the cache or compiled now; nil when it
// does not compile.
func schemaOf(ws projections.WorkflowSchema, logger *slog.Logger) *compiledSchema {
	compiled.Lock()
	cs, ok := compiled.byDigest[ws.Digest]
	compiled.Unlock()
	if ok {
		return cs
	}
	cs, err := compileSchema(ws.Schema)
	if err != nil && logger != nil {
		// Only a sync recorded before payload schemas were checked can
		// hold one: the trigger goes on unchecked rather than fail.
		logger.Warn("a workflow's payloadSchema does not compile: its triggers are not checked until the next sync", "digest", ws.Digest, "err", err)
	}
	compiled.Lock()
	defer compiled.Unlock()
	if len(compiled.byDigest) >= maxCompiledSchemas {
		for k := range compiled.byDigest { // any one: compiling again is cheap
			delete(compiled.byDigest, k)
			break
		}
	}
	compiled.byDigest[ws.Digest] = cs
	return cs
}

// checkTriggerPayload checks a trigger's payload against the workflow's
// payloadSchema of the tenant's last sync (as the projections hold it):
// nil when the workflow declared none or the payload fits, else a
// *apierr.ValidationError, code invalid_payload, naming each bad field.
func (c *Control) checkTriggerPayload(ctx context.Context, tenant, workflow string, payload json.RawMessage) error {
	ws, ok, err := c.store.WorkflowSchema(tenant, workflow)
	if err != nil || !ok {
		return err
	}
	cs := schemaOf(ws, c.logger)
	if cs == nil {
		return nil
	}
	if p := cs.check(ctx, payload); len(p) > 0 {
		return &apierr.ValidationError{Code: apierr.CodeInvalidPayload, Problems: p}
	}
	return nil
}

// check validates payload, a JSON object, and returns one problem per bad
// field, sorted by field, at most maxPayloadProblems.
func (cs *compiledSchema) check(ctx context.Context, payload json.RawMessage) (problems []apierr.FieldProblem) {
	var inst any
	if err := json.Unmarshal(payload, &inst); err != nil {
		return []apierr.FieldProblem{{Field: "payload", Problem: "must be a JSON object"}}
	}
	if n := countValues(inst); n*cs.size > MaxPayloadCheckWork {
		return []apierr.FieldProblem{{Field: "payload", Problem: fmt.Sprintf(
			"is too large to check against the workflow's payloadSchema: %d values × %d schemas is over %d", n, cs.size, MaxPayloadCheckWork)}}
	}
	var errs []jsonschema.KeyError
	func() {
		defer func() {
			if r := recover(); r != nil {
				errs = []jsonschema.KeyError{{PropertyPath: "/", Message: "could not be checked against the workflow's payloadSchema"}}
			}
		}()
		cs.mu.Lock()
		defer cs.mu.Unlock()
		errs = *cs.schema.Validate(ctx, inst).Errs
	}()
	seen := map[apierr.FieldProblem]bool{}
	for _, ke := range errs {
		field, problem := payloadProblem(inst, ke)
		fp := apierr.FieldProblem{Field: field, Problem: problem}
		if !seen[fp] {
			seen[fp] = true
			problems = append(problems, fp)
		}
	}
	slices.SortFunc(problems, func(a, b apierr.FieldProblem) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.Problem, b.Problem)
	})
	if len(problems) > maxPayloadProblems {
		problems = problems[:maxPayloadProblems]
	}
	return problems
}

// payloadProblem turns one of qri-io's errors into a problem of the
// trigger: the field is the error's instance path named as FieldName
// does, and the problem is qri-io's message without the value it quotes
// (a payload may hold personal data; an error body goes to logs). A
// missing required property is named itself: payload.user.email "is
// required", not payload.user.
func payloadProblem(inst any, ke jsonschema.KeyError) (field, problem string) {
	tokens := pointerTokens(ke.PropertyPath)
	msg := ke.Message
	if m := requiredRe.FindStringSubmatch(msg); m != nil {
		return fieldName(inst, append(tokens, m[1])), "is required"
	}
	field = fieldName(inst, tokens)
	for _, w := range wordings {
		if m := w.re.FindStringSubmatch(msg); m != nil {
			return field, w.say(m)
		}
	}
	return field, msg
}

var requiredRe = regexp.MustCompile(`^"(.*)" (?:value|property) is required$`)

// wordings rephrase qri-io's messages that quote the submitted value.
var wordings = []struct {
	re  *regexp.Regexp
	say func(m []string) string
}{
	{regexp.MustCompile(`^max length of (\d+) characters exceeded`), func(m []string) string { return "must be at most " + m[1] + " characters" }},
	{regexp.MustCompile(`^min length of (\d+) characters required`), func(m []string) string { return "must be at least " + m[1] + " characters" }},
	{regexp.MustCompile(`(?s)^regexp pattern (.*) mismatch on string: `), func(m []string) string { return "must match the pattern " + m[1] }},
	{regexp.MustCompile(`^array items must be unique`), func([]string) string { return "must not repeat an item" }},
	{regexp.MustCompile(`(?s) must be less than (\S+)$`), func(m []string) string { return "must be less than " + m[1] }},
	{regexp.MustCompile(`(?s) must be greater than (\S+)$`), func(m []string) string { return "must be greater than " + m[1] }},
	{regexp.MustCompile(`^invalid ([\w-]+): `), func(m []string) string { return "must be a valid " + m[1] }},
	{regexp.MustCompile(`^type should be (.*), got (\w+)$`), func(m []string) string { return "must be of type " + m[1] + ", not " + m[2] }},
	{regexp.MustCompile(`^additional properties are not allowed$`), func([]string) string { return "has a property the schema does not allow" }},
}

// pointerTokens splits a JSON pointer ("/a/0/b~1c", "/" or "" for the
// root) into its unescaped tokens.
func pointerTokens(pointer string) []string {
	rest, _ := strings.CutPrefix(pointer, "/")
	if rest == "" {
		return nil
	}
	tokens := strings.Split(rest, "/")
	for i, t := range tokens {
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
	}
	return tokens
}

// identRe matches the keys fieldName writes after a dot.
var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fieldName names the value of the trigger payload inst at the path tokens
// (a JSON pointer's tokens) as the fields of an error body are named:
// "payload", then ".key" for an object's key that is an identifier
// (letters, digits and _, not starting with a digit), `["key"]` with the key
// as a JSON string for any other key, and "[i]" for an array's index.
// Whether a token is an index is read from the payload itself: the key
// "0" of an object is payload["0"], the first item of an array
// payload.items[0].
func fieldName(inst any, tokens []string) string {
	var b strings.Builder
	b.WriteString("payload")
	cur := inst
	for _, t := range tokens {
		switch v := cur.(type) {
		case []any:
			if i, err := strconv.Atoi(t); err == nil && i >= 0 && i < len(v) {
				fmt.Fprintf(&b, "[%d]", i)
				cur = v[i]
				continue
			}
			cur = nil
		case map[string]any:
			cur = v[t]
		default:
			cur = nil
		}
		if identRe.MatchString(t) {
			b.WriteString("." + t)
			continue
		}
		var q bytes.Buffer
		enc := json.NewEncoder(&q)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(t) // a string always encodes
		b.WriteString("[" + strings.TrimSuffix(q.String(), "\n") + "]")
	}
	return b.String()
}

// countValues counts the JSON values of v, v included.
func countValues(v any) int {
	n := 1
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			n += countValues(c)
		}
	case []any:
		for _, c := range v {
			n += countValues(c)
		}
	}
	return n
}
