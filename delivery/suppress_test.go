package delivery_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery"
)

// TestNormalizeAddress: the one form suppressions are stored and compared
// in, per kind; what each kind refuses.
func TestNormalizeAddress(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		kind, in, want string // want "" : refused
	}{
		{"email", "ada@example.com", "ada@example.com"},
		{"email", "Ada@Example.COM", "ada@example.com"},
		{"email", "  ada@example.com ", "ada@example.com"},
		{"email", "ÄDA@bücher.example", "äda@bücher.example"},
		{"email", "Ada Lovelace <ada@example.com>", ""},
		{"email", "not an address", ""},
		{"email", "ada@example.com\r\nBcc: x@example.com", ""},
		{"email", long(310) + "@example.com", ""}, // 322 characters
		{"email", "", ""},
		{"sms", "+14155550123", "+14155550123"},
		{"sms", "+1 (415) 555-0123", "+14155550123"},
		{"sms", "+1.415.555.0123", "+14155550123"},
		{"sms", "14155550123", ""},
		{"sms", "+0123456789", ""},
		{"sms", "+1415555012345678", ""},
		{"chat", "C0123ABCD", "C0123ABCD"},
		{"chat", "u0123abcd", "U0123ABCD"},
		{"chat", "#general", ""},
		{"push", "fcm-Token:APA91b_x", "fcm-Token:APA91b_x"},
		{"push", long(4096), long(4096)},
		{"push", long(4097), ""},
		{"push", "tok\x00en", ""},
		{"in_app", "ada", ""},
		{"webhook", "https://example.com", ""},
		{"fax", "+14155550123", ""},
	} {
		got, err := delivery.NormalizeAddress(tc.kind, tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s %.40q: normalised to %.40q, want refused", tc.kind, tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %.40q = %.40q, %v; want %.40q", tc.kind, tc.in, got, err, tc.want)
		}
		// Normalising is idempotent: a stored form names itself.
		if again, err := delivery.NormalizeAddress(tc.kind, got); err != nil || again != got {
			t.Errorf("%s %.40q: normalising again gives %.40q, %v", tc.kind, got, again, err)
		}
	}
}
