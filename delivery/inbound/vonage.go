package inbound

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/heraldhq/herald/events"
)

// verifyVonage: a Messages API status webhook, signed by a JWT (HS256,
// keyed by the account's signature secret) in the Authorization header
// whose payload_hash claim is the hex SHA-256 of the body. The message is
// its message_uuid; its uuid and status are the event id.
func verifyVonage(_ context.Context, r Request, _ Deps) (Result, error) {
	secret := configString(r.Config, "signatureSecret")
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if secret == "" || !ok {
		return Result{}, ErrSignature
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return Result{}, ErrSignature
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		PayloadHash string `json:"payload_hash"`
		Exp         int64  `json:"exp"`
	}
	h, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	c, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(h, &header) != nil || header.Alg != "HS256" ||
		json.Unmarshal(c, &claims) != nil {
		return Result{}, ErrSignature
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sum := sha256.Sum256(r.Body)
	if !hmac.Equal(mac.Sum(nil), sig) || !hmac.Equal([]byte(claims.PayloadHash), []byte(hex.EncodeToString(sum[:]))) ||
		(claims.Exp != 0 && r.Now.After(time.Unix(claims.Exp, 0))) {
		return Result{}, ErrSignature
	}
	var ev struct {
		MessageUUID string `json:"message_uuid"`
		Status      string `json:"status"`
		Error       struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(r.Body, &ev) != nil {
		return Result{}, ErrMalformed
	}
	rep := Report{EventID: ev.MessageUUID + ":" + ev.Status, MessageID: ev.MessageUUID}
	switch ev.Status {
	case "delivered":
		rep.Status = events.ReportDelivered
	case "rejected", "undeliverable":
		rep.Status = events.ReportFailed
	case "read":
		rep.Status = events.ReportOpened
	default: // submitted
		return Result{}, nil
	}
	return Result{Reports: keep([]Report{rep})}, nil
}
