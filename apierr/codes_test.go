package apierr

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge/wire"
)

// declaredCodes returns the Code constants of codes.go, name → value.
func declaredCodes(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !strings.HasPrefix(name.Name, "Code") || !ok || lit.Kind != token.STRING {
					continue
				}
				codes[name.Name], _ = strconv.Unquote(lit.Value)
			}
		}
	}
	return codes
}

func TestEveryCodeHasOneStatus(t *testing.T) {
	declared := declaredCodes(t)
	byValue := map[string]string{}
	for name, code := range declared {
		if other, ok := byValue[code]; ok {
			t.Errorf("%s and %s are both %q", name, other, code)
		}
		byValue[code] = name
		if _, ok := table[code]; !ok {
			t.Errorf("%s (%q) has no status in the table", name, code)
		}
	}
	if len(table) != len(byValue) {
		t.Errorf("the table holds %d codes, codes.go declares %d", len(table), len(byValue))
	}
	statuses := map[int]bool{Recorded: true, 400: true, 401: true, 404: true, 405: true, 409: true,
		413: true, 422: true, 429: true, 500: true, 502: true, 503: true}
	for code, status := range table {
		if !statuses[status] {
			t.Errorf("%q: status %d is none the API answers", code, status)
		}
		// A code's error is of its status's kind, so the HTTP layer, which
		// picks the status by kind, answers the code's own status.
		if kind := New(code, "m").Kind; kind != nil && kindOf(status) != kind {
			t.Errorf("%q: New gives kind %v, its status %d is of %v", code, kind, status, kindOf(status))
		}
	}
}

// TestStatusesOfTheContract: the statuses the API contract fixes for a
// code. bridge_not_configured is 409 where a command needs the Bridge
// (POST /v1/sync, POST /v1/events); the one read of the binding (GET
// /v1/bridge) answers 404 through Missing.
func TestStatusesOfTheContract(t *testing.T) {
	fixed := map[string]int{
		CodeInvalidJSON:         http.StatusBadRequest,
		CodeBodyTooLarge:        http.StatusRequestEntityTooLarge,
		CodeNotFound:            http.StatusNotFound,
		CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
		CodeValidationFailed:    http.StatusUnprocessableEntity,
		CodeInternal:            http.StatusInternalServerError,
		CodeUnauthorized:        http.StatusUnauthorized,
		CodeSubscriberNotFound:  http.StatusNotFound,
		CodeTopicHasSubscribers: http.StatusConflict,
		CodeUnknownChannel:      http.StatusNotFound,
		CodeEmptyPatch:          http.StatusBadRequest,
		CodeBridgeNotConfigured: http.StatusConflict,
		CodeBridgeUnreachable:   http.StatusBadGateway,
		CodeBridgeRejected:      http.StatusBadGateway,
		CodeInvalidWorkflowID:   http.StatusUnprocessableEntity,
		CodeRunFinished:         http.StatusConflict,
		CodeNoChannel:           http.StatusUnprocessableEntity,
		CodeProviderRejected:    http.StatusUnprocessableEntity,
		CodeProviderUnavailable: http.StatusBadGateway,
		CodeDeliveryInProgress:  http.StatusConflict,
		CodeRateLimited:         http.StatusTooManyRequests,
		CodeTransactionMismatch: http.StatusConflict,
		CodeRunNotFailed:        http.StatusConflict,
	}
	for code, want := range fixed {
		if got := Status(code); got != want {
			t.Errorf("Status(%q) = %d, the contract says %d", code, got, want)
		}
	}
	// The codes a failed run's or step's error carries.
	for _, code := range []string{"no_channel", "no_address", "provider_rejected", "bridge_unauthorized",
		"workflow_not_found", "nondeterministic", "attempts_exhausted", "cancelled", "invalid_step",
		"invalid_content"} {
		if _, ok := table[code]; !ok {
			t.Errorf("%q, a code of a run's error, is not in the table", code)
		}
	}
}

func TestMissingIsTheOneOtherStatus(t *testing.T) {
	if err := New(CodeBridgeNotConfigured, "m"); !errors.Is(err, ErrConflict) {
		t.Errorf("New(bridge_not_configured) is not a conflict: %v", err.Kind)
	}
	if err := Missing(CodeBridgeNotConfigured, "m"); !errors.Is(err, ErrNotFound) || err.Code != CodeBridgeNotConfigured {
		t.Errorf("Missing(bridge_not_configured) = %+v, want a not-found of that code", err)
	}
}

// TestWireCodesAreTheTableCodes: the tenant SDK may import nothing of
// ours outside bridge/..., so the codes that cross the wire are declared
// there too; they must be the table's, word for word.
func TestWireCodesAreTheTableCodes(t *testing.T) {
	same := map[string]string{
		CodeNondeterministic: wire.CodeNondeterministic,
		CodeDuplicateStepID:  wire.CodeDuplicateStepID,
		// A send skipped for want of an address, and a send that fails for
		// want of any recipient, say it in one word.
		CodeNoAddress: string(wire.SkipNoAddress),
	}
	for code, onWire := range same {
		if code != onWire {
			t.Errorf("the table's %q is %q on the wire", code, onWire)
		}
	}
}

// TestNoCodeDeclaredOutsideTheTable walks the module's code (not its
// tests, nor the tenant SDK under bridge/, checked above) for a string
// literal that is one of the table's codes: a code is written once, here.
func TestNoCodeDeclaredOutsideTheTable(t *testing.T) {
	// Literals that spell a code and mean something else.
	otherMeaning := map[string]string{
		"delivery/slack/slack.go:channel_not_found": "an error of Slack's API",
		"metrics/metrics.go:cancelled":              "the label of a run's end",
		"runstate/state.go:cancelled":               "a run's status",
	}
	declared := declaredCodes(t)
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "apierr" || rel == "bridge" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if cl, ok := n.(*ast.CompositeLit); ok {
				checkLiteral(t, rel, cl, declared)
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if _, isCode := table[s]; err != nil || !isCode {
				return true
			}
			if _, ok := otherMeaning[rel+":"+s]; !ok {
				t.Errorf("%s: the code %q is written as a literal: use apierr's constant", rel, s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkLiteral fails on an apierr.Error built field by field, which could
// pair a code with another kind (New and Missing are the roads), and on a
// ValidationError whose code is not answered 422.
func checkLiteral(t *testing.T, file string, cl *ast.CompositeLit, declared map[string]string) {
	t.Helper()
	sel, ok := cl.Type.(*ast.SelectorExpr)
	if !ok || !isIdent(sel.X, "apierr") {
		return
	}
	switch sel.Sel.Name {
	case "Error":
		t.Errorf("%s: an apierr.Error literal: build it with apierr.New (or Missing)", file)
	case "ValidationError":
		for _, elt := range cl.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok || !isIdent(kv.Key, "Code") {
				continue
			}
			code, ok := kv.Value.(*ast.SelectorExpr)
			if !ok || !isIdent(code.X, "apierr") {
				continue // a variable: its values are checked where they are chosen
			}
			if Status(declared[code.Sel.Name]) != http.StatusUnprocessableEntity {
				t.Errorf("%s: a ValidationError of code %s, not a 422", file, code.Sel.Name)
			}
		}
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
