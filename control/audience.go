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

func subscriberErr(err error, externalID string) error {
	if errors.Is(err, projections.ErrNotFound) {
		return apierr.Errorf(apierr.CodeSubscriberNotFound, "subscriber %q does not exist", externalID)
	}
	return err
}

func topicErr(err error, key string) error {
	if errors.Is(err, projections.ErrNotFound) {
		return apierr.Errorf(apierr.CodeTopicNotFound, "topic %q does not exist", key)
	}
	return err
}
