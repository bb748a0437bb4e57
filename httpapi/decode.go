package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/apierr"
)

// maxBody is the largest request body accepted.
const maxBody = 1 << 20

// readBody reads the whole body, refusing more than maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errBodyTooLarge
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidJSON, err)
	}
	return data, nil
}

// decode reads the request body into v (a pointer to a struct) strictly:
// an empty body is {}; invalid JSON or trailing data is 400 invalid_json;
// a field v does not declare (names are case-sensitive) or a known field of
// the wrong type is 422 validation_failed naming its dotted path.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := readBody(w, r)
	if err != nil {
		return err
	}
	return decodeBytes(data, v)
}

func decodeBytes(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if !json.Valid(data) {
		return errInvalidJSON
	}
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return errInvalidJSON
	}
	var p apierr.Problems
	if _, ok := raw.(map[string]any); !ok {
		p.Add("body", "must be a JSON object")
		return p.Err()
	}
	unknownFields(raw, reflect.TypeOf(v), "", &p)
	if err := p.Err(); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			p.Add(te.Field, "must be %s", article(te.Type))
			return p.Err()
		}
		return fmt.Errorf("%w: %v", errInvalidJSON, err)
	}
	return nil
}

// unknownFields adds a problem for every key of raw that type t (a struct,
// pointer, map or slice of them) does not declare, recursively.
func unknownFields(raw any, t reflect.Type, path string, p *apierr.Problems) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := raw.(map[string]any)
		if !ok || t == reflect.TypeOf(json.RawMessage{}) {
			return
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields[name] = f.Type
		}
		for k, v := range obj {
			ft, ok := fields[k]
			if !ok {
				p.Add(join(path, k), "is not a known field")
				continue
			}
			unknownFields(v, ft, join(path, k), p)
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return
		}
		for k, v := range obj {
			unknownFields(v, t.Elem(), join(path, k), p)
		}
	case reflect.Slice:
		arr, ok := raw.([]any)
		if !ok {
			return
		}
		for i, v := range arr {
			unknownFields(v, t.Elem(), path+"["+strconv.Itoa(i)+"]", p)
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// article names a Go type the way a JSON client thinks of it.
func article(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of another type"
}
