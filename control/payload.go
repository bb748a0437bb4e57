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
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var c bytes.Buffer
	if raw[0] != '{' || json.Compact(&c, raw) != nil {
		p.Add(field, "must be a JSON object")
		return nil
	}
	if c.Len() > MaxPayloadBytes {
		p.Add(field, "must be at most %d bytes", MaxPayloadBytes)
		return nil
	}
	return c.Bytes()
}
