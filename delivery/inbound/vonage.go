package inbound

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"hash"
	"net/url"
	"sort"
	"strings"

	"github.com/heraldhq/herald/events"
)

// verifyVonage: a delivery receipt of Vonage's SMS API, the API the
// sms-vonage provider sends with (the Messages API's status webhooks name
// a message_uuid the SMS API never answers, and Vonage posts one format or
// the other per API key, never both). Vonage posts it as a form (POST) or
// as JSON (POST-JSON), whichever the API key's webhook format says:
// messageId (the message-id the send recorded), status, err-code, and,
// when the account signs its webhooks, timestamp, nonce and sig. sig is
// Vonage's signature with the account's signature secret (see
// vonageSignature); a receipt without one is refused, so the channel is
// heard only when it holds the signatureSecret. The message and its
// status are the event id: Vonage sends one receipt per status.
func verifyVonage(_ context.Context, r Request, _ Deps) (Result, error) {
	secret := configString(r.Config, "signatureSecret")
	params, ok := vonageParams(r.Body)
	if secret == "" || !ok {
		return Result{}, ErrSignature
	}
	sig := params["sig"]
	delete(params, "sig")
	if sig == "" || !vonageVerify(params, secret, sig) {
		return Result{}, ErrSignature
	}
	id, status, code := params["messageId"], params["status"], params["err-code"]
	if code == "0" { // no error
		code = ""
	}
	return vonageOutcomes.result(event{name: status, id: id + ":" + status, messageID: id, detail: code}), nil
}

// vonageOutcomes are the receipt statuses that are outcomes (accepted,
// buffered, unknown are not).
var vonageOutcomes = outcomes{
	"delivered": events.ReportDelivered,
	"expired":   events.ReportFailed,
	"failed":    events.ReportFailed,
	"rejected":  events.ReportFailed,
}

// vonageParams reads a receipt's parameters from a form or a JSON object
// of strings (or numbers, kept as written). ok is false for anything
// else: its signature could not be computed.
func vonageParams(body []byte) (map[string]string, bool) {
	out := map[string]string{}
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil {
			return nil, false
		}
		for k, v := range m {
			switch v := v.(type) {
			case string:
				out[k] = v
			case json.Number:
				out[k] = v.String()
			default:
				return nil, false
			}
		}
		return out, true
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, false
	}
	for k, v := range form {
		if len(v) != 1 {
			return nil, false
		}
		out[k] = v[0]
	}
	return out, true
}

// vonageVerify checks sig against each signing method Vonage offers
// (the account chooses one; the channel does not say which): "MD5 hash",
// the default, and the MD5, SHA-1, SHA-256 and SHA-512 HMACs. Each is
// hex, upper or lower case; its length tells the digest apart.
func vonageVerify(params map[string]string, secret, sig string) bool {
	got, err := hex.DecodeString(strings.ToLower(sig))
	if err != nil {
		return false
	}
	text := vonageSignedText(params)
	var candidates [][]byte
	switch len(got) {
	case md5.Size:
		sum := md5.Sum([]byte(text + secret))
		candidates = append(candidates, sum[:], vonageHMAC(md5.New, secret, text))
	case sha1.Size:
		candidates = append(candidates, vonageHMAC(sha1.New, secret, text))
	case sha256.Size:
		candidates = append(candidates, vonageHMAC(sha256.New, secret, text))
	case sha512.Size:
		candidates = append(candidates, vonageHMAC(sha512.New, secret, text))
	}
	ok := false
	for _, c := range candidates {
		ok = hmac.Equal(c, got) || ok
	}
	return ok
}

func vonageHMAC(h func() hash.Hash, secret, text string) []byte {
	mac := hmac.New(h, []byte(secret))
	mac.Write([]byte(text))
	return mac.Sum(nil)
}

// vonageSignedText is what Vonage signs: each parameter but sig, sorted
// by name, as "&name=value", with any '&' or '=' in a value made '_'.
func vonageSignedText(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	clean := strings.NewReplacer("&", "_", "=", "_")
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("&" + k + "=" + clean.Replace(params[k]))
	}
	return b.String()
}
