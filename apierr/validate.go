package apierr

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValidID reports whether s is a well-formed caller-chosen id (a
// subscriber's externalId, a transactionId, …): 1 to maxChars characters
// of valid UTF-8 with no control character, so never a zero byte or a
// line break. Dots, slashes, '@', spaces and any other Unicode are data.
// Ids are encoded before they reach a subject token, so the rule protects
// stored keys and log lines, not the subject grammar.
func ValidID(s string, maxChars int) bool {
	n := utf8.RuneCountInString(s)
	return n >= 1 && n <= maxChars && utf8.ValidString(s) && !HasControl(s, "")
}

// HasControl reports whether s holds a control character other than those
// in allowed (e.g. "\t\n" for multi-line text).
func HasControl(s, allowed string) bool {
	for _, r := range s {
		if unicode.IsControl(r) && !strings.ContainsRune(allowed, r) {
			return true
		}
	}
	return false
}
