package httpapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/testherald"
)

// internalHosts are spellings of internal addresses a tenant might give as
// a destination: canonical ones, every form a resolver or URL parser reads
// as loopback (inet_aton's numbers, a trailing dot), localhost names, and a
// numeric host that is no address at all.
var internalHosts = []string{
	"127.0.0.1", "169.254.169.254", "10.0.0.1", "::1", "::ffff:127.0.0.1",
	"2130706433", "127.1", "0x7f000001", "0177.0.0.1", "0", "127.0.0.1.", "0xa9fea9fe",
	"localhost", "localhost.", "LocalHost", "api.localhost",
	"1.2.3.256",
}

// publicHost is a public address: no lookup, accepted with private egress
// off.
const publicHost = "93.184.216.34"

// urlHost writes host as the host part of a URL.
func urlHost(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// notDestinations are the string fields of the catalog known to name no
// place Herald connects to. A string field of the catalog that is neither
// here nor marked with a delivery.Dest fails TestEveryCatalogDestinationRefusedAtConfiguration:
// whoever adds a field says which it is.
var notDestinations = map[string]bool{
	"username": true, "password": true, "fromEmail": true, "fromName": true, // email-smtp
	"region": true, "accessKeyId": true, "secretAccessKey": true, "topicArn": true, // email-ses
	"accountSid": true, "authToken": true, "from": true, // sms-twilio
	"botToken": true, // chat-slack
	"secret":   true, // webhook

	"serverToken": true, "messageStream": true, // email-postmark
	"apiKey": true, "webhookPublicKey": true, // email-sendgrid
	"domain": true, "webhookSigningKey": true, // email-mailgun
	"apiSecret": true, "signatureSecret": true, // sms-vonage
	"accessToken": true, "teamId": true, "keyId": true, "privateKey": true, "topic": true, // push-expo, push-apns
	"webhookSecret": true, // email-resend
}

// looksLikeDestination: a field named so, or checked as a URL, is a
// destination whatever the list above says.
var looksLikeDestination = regexp.MustCompile(`(?i)(url|uri|host|endpoint|server|webhook)`)

// namesACredential: a field whose name ends so holds a credential, even
// when the rest of its name looks like a destination (serverToken,
// webhookSigningKey): it must still be listed in notDestinations.
var namesACredential = regexp.MustCompile(`(Token|Key|Secret)$`)

// destValue is a value of a field of kind d naming host.
func destValue(t *testing.T, d delivery.Dest, host string) string {
	t.Helper()
	switch d {
	case delivery.DestHost:
		return host
	case delivery.DestURL:
		return "http://" + urlHost(host) + ":8080"
	case delivery.DestServiceAccount:
		b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "p",
			"token_uri": "https://" + urlHost(host) + "/token"})
		return string(b)
	}
	t.Fatalf("destValue: no value for Dest %d: teach this test the new kind", d)
	return ""
}

// sampleConfig is a valid config of e whose every destination is public.
func sampleConfig(t *testing.T, e delivery.CatalogEntry) map[string]any {
	t.Helper()
	samples := map[string]any{"region": "eu-west-1", "secret": "whsec_c2VjcmV0", "from": "+15550100",
		"teamId": "ABCDE12345", "keyId": "KEY1234567", "webhookSecret": "whsec_c2VjcmV0",
		"topicArn": "arn:aws:sns:eu-west-1:123456789012:ses-events"}
	config := map[string]any{}
	for _, f := range e.Fields {
		switch {
		case f.Dest != delivery.NoDest:
			config[f.Name] = destValue(t, f.Dest, publicHost)
		case samples[f.Name] != nil:
			config[f.Name] = samples[f.Name]
		case f.Type == delivery.TypeNumber && f.Check.Min != nil:
			config[f.Name] = *f.Check.Min
		case f.Type == delivery.TypeNumber:
			config[f.Name] = 1
		case f.Type == delivery.TypeBoolean:
			config[f.Name] = false
		case f.Check.Email:
			config[f.Name] = "ada@example.com"
		default:
			config[f.Name] = "x"
		}
	}
	return config
}

// expectRefused checks a 422 validation_failed whose only detail names
// field, and that the refused value is not echoed.
func expectRefused(t *testing.T, what string, r testherald.Response, field, value string) {
	t.Helper()
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details []struct {
				Field   string `json:"field"`
				Problem string `json:"problem"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != http.StatusUnprocessableEntity ||
		body.Error.Code != "validation_failed" || body.Error.Message == "" ||
		len(body.Error.Details) != 1 || body.Error.Details[0].Field != field || body.Error.Details[0].Problem == "" {
		t.Errorf("%s: %d %s, want 422 validation_failed naming only %s", what, r.Status, r.Body, field)
		return
	}
	if len(value) > 3 && strings.Contains(string(r.Body), value) {
		t.Errorf("%s: the answer echoes the value: %s", what, r.Body)
	}
}

// TestEveryCatalogDestinationRefusedAtConfiguration walks the channel
// catalog (the source of GET /v1/channels/catalog): every string field is
// either a destination or known not to be one, and with private egress off
// every destination field, in every spelling of an internal address, is a
// 422 naming it, on POST and on PATCH, while a public address is accepted.
func TestEveryCatalogDestinationRefusedAtConfiguration(t *testing.T) {
	// Every destination of every entry in every spelling is a few
	// hundred requests: more than the default burst of the rate limit,
	// which this test is not about (0 turns it off).
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_ALLOW_PRIVATE_EGRESS": "false", "HERALD_RATE_LIMIT": "0"}})
	_, key := h.Tenant("Acme")
	destinations := 0
	for _, e := range delivery.Catalog() {
		for _, f := range e.Fields {
			if f.Type != delivery.TypeString {
				continue
			}
			looks := (looksLikeDestination.MatchString(f.Name) && !namesACredential.MatchString(f.Name)) ||
				strings.HasPrefix(f.Check.Pattern, "^https?://")
			switch {
			case f.Dest == delivery.NoDest && (looks || !notDestinations[f.Name]):
				t.Errorf("%s: field %s is not marked as a destination (delivery.Field.Dest) nor listed in notDestinations", e.ChannelKey, f.Name)
			case f.Dest != delivery.NoDest && notDestinations[f.Name]:
				t.Errorf("%s: field %s is a destination and listed in notDestinations", e.ChannelKey, f.Name)
			}
		}

		base := sampleConfig(t, e)
		if r := h.Do("POST", "/v1/channels", key, map[string]any{"channelKey": e.ChannelKey, "config": base}); r.Status != http.StatusCreated {
			t.Fatalf("%s: a config with public destinations: %d %s", e.ChannelKey, r.Status, r.Body)
		}
		for _, f := range e.Fields {
			if f.Dest == delivery.NoDest {
				continue
			}
			destinations++
			for _, host := range internalHosts {
				config := maps.Clone(base)
				config[f.Name] = destValue(t, f.Dest, host)
				what := fmt.Sprintf("%s %s=%q", e.ChannelKey, f.Name, config[f.Name])
				r := h.Do("POST", "/v1/channels", key, map[string]any{"channelKey": e.ChannelKey, "config": config})
				expectRefused(t, "POST "+what, r, "config."+f.Name, host)
				r = h.Do("PATCH", "/v1/channels/"+e.ChannelKey, key, map[string]any{"config": config})
				expectRefused(t, "PATCH "+what, r, "config."+f.Name, host)
			}
		}
	}
	// email-smtp host; email-ses endpoint; the apiBaseUrl of sms-twilio,
	// chat-slack and push-fcm; push-fcm's token_uri; the webhook url.
	if destinations < 7 {
		t.Fatalf("the catalog marks %d destination fields, want at least 7", destinations)
	}
}

// TestBridgeAndWebhookURLsRefuseEveryInternalSpelling: PUT /v1/bridge and
// POST and PATCH /v1/webhooks refuse every spelling of an internal address
// with a 422 naming the field.
func TestBridgeAndWebhookURLsRefuseEveryInternalSpelling(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_ALLOW_PRIVATE_EGRESS": "false"}})
	_, key := h.Tenant("Acme")
	r := h.Do("POST", "/v1/webhooks", key, map[string]any{"url": "https://" + publicHost + "/hook", "events": []string{"*"}})
	if r.Status != http.StatusCreated {
		t.Fatalf("a public webhook: %d %s", r.Status, r.Body)
	}
	var wh struct{ WebhookID string }
	r.JSON(t, &wh)
	for _, host := range internalHosts {
		u := "https://" + urlHost(host) + ":8443/herald"
		expectRefused(t, "PUT /v1/bridge "+u, h.Do("PUT", "/v1/bridge", key, map[string]any{"webhookUrl": u}), "webhookUrl", host)
		expectRefused(t, "POST /v1/webhooks "+u, h.Do("POST", "/v1/webhooks", key, map[string]any{"url": u, "events": []string{"*"}}), "url", host)
		expectRefused(t, "PATCH /v1/webhooks "+u, h.Do("PATCH", "/v1/webhooks/"+wh.WebhookID, key, map[string]any{"url": u}), "url", host)
	}
	if r := h.Do("PUT", "/v1/bridge", key, map[string]any{"webhookUrl": "https://" + publicHost + "/herald"}); r.Status != http.StatusOK {
		t.Fatalf("a public Bridge: %d %s", r.Status, r.Body)
	}
}
