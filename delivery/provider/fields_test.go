package provider

import (
	"errors"
	"testing"
)

// TestFieldsKeepTheFirstError: reads go on after a bad field and return
// "", and Err is the first field's error, as a constructor that returned
// at each error would say.
func TestFieldsKeepTheFirstError(t *testing.T) {
	f := ReadFields(map[string]any{"a": "x", "b": 7, "c": "", "apiBaseUrl": "https://api.example.com/"})
	if got := f.String("a", true); got != "x" || f.Err() != nil {
		t.Fatalf("a = %q, err %v", got, f.Err())
	}
	if got := f.BaseURL("apiBaseUrl", "https://def"); got != "https://api.example.com" {
		t.Fatalf("apiBaseUrl = %q", got)
	}
	if got := f.String("b", false); got != "" || f.Err() == nil || f.Err().Error() != "b: want a string" {
		t.Fatalf("b = %q, err %v", got, f.Err())
	}
	if got := f.String("a", true); got != "" {
		t.Fatalf("a read after an error = %q", got)
	}
	f.Fail(errors.New("later"))
	_ = f.String("c", true)
	_ = f.From()
	if f.Err().Error() != "b: want a string" {
		t.Fatalf("err %v, want the first", f.Err())
	}

	g := ReadFields(map[string]any{"fromEmail": "a@example.com"})
	if from := g.From(); from != "a@example.com" || g.BaseURL("apiBaseUrl", "https://def") != "https://def" || g.Err() != nil {
		t.Fatalf("from %q, err %v", from, g.Err())
	}
	g.Fail(errors.New("domain: not a domain name"))
	if g.Err() == nil || g.String("fromEmail", true) != "" {
		t.Fatalf("Fail was not kept: %v", g.Err())
	}
}
