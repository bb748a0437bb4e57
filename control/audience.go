package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/projections"
)

// Audience limits (CONTRACT.md section 2).
const (
	MaxExternalIDChars  = 256
	MaxTopicKeyChars    = 128
	MaxContactKinds     = 16
	MaxAddressesPerKind = 10
	MaxAddressChars     = 320
	MaxPushTokenChars   = 4096 // a push address (device token): CONTRACT §10
	MaxAttributesBytes  = 64 << 10
	MaxLocaleChars      = 64
	MaxTimezoneChars    = 64 // the longest IANA name is 32
	MaxKindChars        = 64
	MaxTopicNameChars   = 256
	MaxTopicDescChars   = 1024
)

// ValidExternalID reports whether id is a valid subscriber externalId:
// 1–256 characters of valid UTF-8 with no control character (so never a
// zero byte). Dots, slashes, '@', spaces and any other Unicode are data.
func ValidExternalID(id string) bool {
	return apierr.ValidID(id, MaxExternalIDChars)
}

// ValidTopicKey reports whether key is a valid topic key: 1–128 of
// [A-Za-z0-9._:-].
func ValidTopicKey(key string) bool {
	if len(key) < 1 || len(key) > MaxTopicKeyChars {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

func validKind(kind string) bool {
	if len(kind) < 1 || len(kind) > MaxKindChars {
		return false
	}
	for i := 0; i < len(kind); i++ {
		c := kind[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func checkExternalID(p *apierr.Problems, field, id string) {
	if !ValidExternalID(id) {
		p.Add(field, "must be 1 to %d printable characters", MaxExternalIDChars)
	}
}

// externalIDErr is the *apierr.ValidationError of id in field when id
// is not a valid external id, else nil.
func externalIDErr(field, id string) error {
	var p apierr.Problems
	checkExternalID(&p, field, id)
	return p.Err()
}

// topicKeyErr is the *apierr.ValidationError of key in field when key is
// not a valid topic key, else nil.
func topicKeyErr(field, key string) error {
	var p apierr.Problems
	checkTopicKey(&p, field, key)
	return p.Err()
}

func checkTopicKey(p *apierr.Problems, field, key string) {
	if !ValidTopicKey(key) {
		p.Add(field, "must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", MaxTopicKeyChars)
	}
}

// isNull reports whether a raw JSON value given for a field is null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// parseOptionalText validates one optional text field of a patch: set
// reports whether it was given; v is nil for null.
func parseOptionalText(p *apierr.Problems, field string, raw json.RawMessage, maxChars int, allowedCtl string) (v *string, set bool) {
	if raw == nil {
		return nil, false
	}
	if isNull(raw) {
		return nil, true
	}
	var s string
	switch err := json.Unmarshal(raw, &s); {
	case err != nil:
		p.Add(field, "must be a string")
	case utf8.RuneCountInString(s) > maxChars:
		p.Add(field, "must be at most %d characters", maxChars)
	case apierr.HasControl(s, allowedCtl):
		p.Add(field, "must not contain control characters")
	default:
		return &s, true
	}
	return nil, true
}

// current is what a read of the projections found (v), nil when it
// found nothing (projections.ErrNotFound); err when the read failed.
func current[T any](v T, err error) (*T, error) {
	switch {
	case err == nil:
		return &v, nil
	case errors.Is(err, projections.ErrNotFound):
		return nil, nil
	}
	return nil, err
}

// notFound is err, or when err is projections.ErrNotFound the
// *apierr.Error of code with a message formatted from format and args:
// the not-found of the resource a read looked for.
func notFound(err error, code, format string, args ...any) error {
	if errors.Is(err, projections.ErrNotFound) {
		return apierr.Errorf(code, format, args...)
	}
	return err
}

func subscriberErr(err error, externalID string) error {
	return notFound(err, apierr.CodeSubscriberNotFound, "subscriber %q does not exist", externalID)
}

func topicErr(err error, key string) error {
	return notFound(err, apierr.CodeTopicNotFound, "topic %q does not exist", key)
}
