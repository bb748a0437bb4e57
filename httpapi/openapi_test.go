package httpapi_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/heraldhq/herald/docs"
	"github.com/heraldhq/herald/httpapi"
	"github.com/heraldhq/herald/internal/testherald"
)

// openAPIDoc is the part of the document the tests read.
type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]openAPIOp       `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

type openAPIOp struct {
	OperationID string                     `json:"operationId"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var d openAPIDoc
	if err := json.Unmarshal(docs.OpenAPI, &d); err != nil {
		t.Fatalf("docs/openapi.json: %v", err)
	}
	return d
}

// patternVar is a path variable with its pattern, {name:pattern}.
var patternVar = regexp.MustCompile(`\{(\w+):[^}]*\}`)

// TestOpenAPIDescribesEveryRoute walks the router and fails when a route is
// missing from docs/openapi.json or the document names a route that does
// not exist.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	d := loadOpenAPI(t)
	documented := map[string]bool{}
	for path, ops := range d.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	api := httpapi.New(httpapi.Config{AdminToken: "a", InternalToken: "i"}, httpapi.Deps{})
	served := map[string]bool{}
	err := api.Router().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		path = patternVar.ReplaceAllString(path, "{$1}") // {page:regexp} is {page} in the document
		methods, err := route.GetMethods()
		if err != nil {
			return err
		}
		for _, m := range methods {
			served[m+" "+path] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing, extra []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from docs/openapi.json: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("docs/openapi.json names routes the API does not serve: %v", extra)
	}
	if len(served) < 35 {
		t.Fatalf("walked only %d routes", len(served))
	}
}

// TestOpenAPIDocumentIsWellFormed checks the document's own consistency:
// OpenAPI 3.1, unique operation ids, every $ref resolves, every operation
// answers a success and names the 500.
func TestOpenAPIDocumentIsWellFormed(t *testing.T) {
	d := loadOpenAPI(t)
	if d.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", d.OpenAPI)
	}
	ids := map[string]string{}
	for path, ops := range d.Paths {
		for method, op := range ops {
			where := strings.ToUpper(method) + " " + path
			if op.OperationID == "" {
				t.Errorf("%s: no operationId", where)
			} else if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %s", where, other, op.OperationID)
			}
			ids[op.OperationID] = where
			success := false
			for status := range op.Responses {
				if status[0] == '2' {
					success = true
				}
			}
			if !success || op.Responses["500"] == nil {
				t.Errorf("%s: responses %v lack a success or the 500", where, keys(op.Responses))
			}
		}
	}
	var raw any
	if err := json.Unmarshal(docs.OpenAPI, &raw); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if k == "$ref" {
					ref, _ := e.(string)
					parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
					if len(parts) != 2 || d.Components[parts[0]][parts[1]] == nil {
						t.Errorf("$ref %q does not resolve", ref)
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(raw)
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPIServed: GET /v1/openapi.json answers the embedded document,
// without credentials.
func TestOpenAPIServed(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	r := h.Do("GET", "/v1/openapi.json", "", nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /v1/openapi.json: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	if string(r.Body) != string(docs.OpenAPI) {
		t.Fatal("the served document is not docs/openapi.json")
	}
}
