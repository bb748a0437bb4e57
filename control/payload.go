package control

import (
	"bytes"
	"encoding/json"

	"github.com/heraldhq/herald/apierr"
)

// MaxPayloadBytes bounds the payload of a trigger or a signal, compacted.
const MaxPayloadBytes = 256 << 10

// payloadObject normalises the payload of a command: absent or JSON null
// gives nil (the command picks its default); a JSON object gives its
// compact form, at most MaxPayloadBytes; anything else adds a problem
// naming field and gives nil.
func payloadObject(field string, raw json.RawMessage, p *apierr.Problems) json.RawMessage {
	if isAbsent(raw) {
		return nil
	}
	obj, ok := compactObject(raw)
	if !ok {
		p.Add(field, "must be a JSON object")
		return nil
	}
	if len(obj) > MaxPayloadBytes {
		p.Add(field, "must be at most %d bytes", MaxPayloadBytes)
		return nil
	}
	return obj
}

// isAbsent reports whether a raw JSON field was not given or given null.
func isAbsent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// compactObject returns raw in compact form when it is one JSON object;
// false otherwise. Every JSON object a command takes goes through it.
func compactObject(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var c bytes.Buffer
	if json.Compact(&c, raw) != nil {
		return nil, false
	}
	return c.Bytes(), true
}
