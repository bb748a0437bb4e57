package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/projections"
)

// smtpChannel is a valid POST /v1/channels body with extra fields set.
func smtpChannel(password string, extra map[string]any) map[string]any {
	body := map[string]any{"channelKey": "email-smtp", "config": map[string]any{
		"host": "smtp.example.com", "port": 587, "secure": false, "username": "ada",
		"password": password, "fromEmail": "no-reply@example.com", "fromName": "Acme",
	}}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

// channelSafeView is the safe view with every field it may carry.
type channelSafeView struct {
	ChannelKey string `json:"channelKey"`
	Kind       string `json:"kind"`
	Label      string `json:"label"`
	Enabled    bool   `json:"enabled"`
	Priority   int    `json:"priority"`
	Configured bool   `json:"configured"`
	CreatedAt  string `json:"createdAt"`
}

// safeViewOf decodes one safe view, failing on any key beyond the seven
// of the contract.
func safeViewOf(t *testing.T, raw []byte) channelSafeView {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatalf("safe view %s: %v", raw, err)
	}
	got := make([]string, 0, len(keys))
	for k := range keys {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"channelKey", "configured", "createdAt", "enabled", "kind", "label", "priority"}
	if !slices.Equal(got, want) {
		t.Fatalf("safe view keys %v, want %v", got, want)
	}
	var v channelSafeView
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func listChannels(t *testing.T, h *testherald.Herald, key string) []channelSafeView {
	t.Helper()
	r := h.Do("GET", "/v1/channels", key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	var raw []json.RawMessage
	r.JSON(t, &raw)
	out := make([]channelSafeView, len(raw))
	for i, item := range raw {
		out[i] = safeViewOf(t, item)
	}
	return out
}

func TestChannelCatalog(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	r := h.Do("GET", "/v1/channels/catalog", key, nil)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("catalog: %d %s", r.Status, r.Body)
	}
	const want = `[{"channelKey":"email-smtp","kind":"email","label":"Email (SMTP)","fields":[
		{"name":"host","type":"string","required":true,"secret":false},
		{"name":"port","type":"number","required":true,"secret":false},
		{"name":"secure","type":"boolean","required":false,"secret":false},
		{"name":"username","type":"string","required":false,"secret":false},
		{"name":"password","type":"string","required":false,"secret":true},
		{"name":"fromEmail","type":"string","required":true,"secret":false},
		{"name":"fromName","type":"string","required":false,"secret":false},
		{"name":"allowInsecureAuth","type":"boolean","required":false,"secret":false}]},
		{"channelKey":"email-ses","kind":"email","label":"Email (Amazon SES)","fields":[
		{"name":"region","type":"string","required":true,"secret":false},
		{"name":"accessKeyId","type":"string","required":true,"secret":false},
		{"name":"secretAccessKey","type":"string","required":true,"secret":true},
		{"name":"fromEmail","type":"string","required":true,"secret":false},
		{"name":"fromName","type":"string","required":false,"secret":false},
		{"name":"endpoint","type":"string","required":false,"secret":false},
		{"name":"topicArn","type":"string","required":false,"secret":false}]},
		{"channelKey":"email-postmark","kind":"email","label":"Email (Postmark)","fields":[
		{"name":"serverToken","type":"string","required":true,"secret":true},
		{"name":"fromEmail","type":"string","required":true,"secret":false},
		{"name":"fromName","type":"string","required":false,"secret":false},
		{"name":"messageStream","type":"string","required":false,"secret":false},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"email-sendgrid","kind":"email","label":"Email (SendGrid)","fields":[
		{"name":"apiKey","type":"string","required":true,"secret":true},
		{"name":"fromEmail","type":"string","required":true,"secret":false},
		{"name":"fromName","type":"string","required":false,"secret":false},
		{"name":"webhookPublicKey","type":"string","required":false,"secret":false},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"email-mailgun","kind":"email","label":"Email (Mailgun)","fields":[
		{"name":"apiKey","type":"string","required":true,"secret":true},
		{"name":"domain","type":"string","required":true,"secret":false},
		{"name":"fromEmail","type":"string","required":true,"secret":false},
		{"name":"fromName","type":"string","required":false,"secret":false},
		{"name":"webhookSigningKey","type":"string","required":false,"secret":true},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"email-resend","kind":"email","label":"Email (Resend)","fields":[
		{"name":"apiKey","type":"string","required":true,"secret":true},
		{"name":"fromEmail","type":"string","required":true,"secret":false},
		{"name":"fromName","type":"string","required":false,"secret":false},
		{"name":"webhookSecret","type":"string","required":false,"secret":true},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"sms-twilio","kind":"sms","label":"SMS (Twilio)","fields":[
		{"name":"accountSid","type":"string","required":true,"secret":false},
		{"name":"authToken","type":"string","required":true,"secret":true},
		{"name":"from","type":"string","required":true,"secret":false},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"sms-vonage","kind":"sms","label":"SMS (Vonage)","fields":[
		{"name":"apiKey","type":"string","required":true,"secret":false},
		{"name":"apiSecret","type":"string","required":true,"secret":true},
		{"name":"from","type":"string","required":true,"secret":false},
		{"name":"signatureSecret","type":"string","required":false,"secret":true},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"chat-slack","kind":"chat","label":"Chat (Slack)","fields":[
		{"name":"botToken","type":"string","required":true,"secret":true},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"push-fcm","kind":"push","label":"Push (Firebase Cloud Messaging)","fields":[
		{"name":"serviceAccountJson","type":"string","required":true,"secret":true},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"push-apns","kind":"push","label":"Push (Apple Push Notification service)","fields":[
		{"name":"teamId","type":"string","required":true,"secret":false},
		{"name":"keyId","type":"string","required":true,"secret":false},
		{"name":"privateKey","type":"string","required":true,"secret":true},
		{"name":"topic","type":"string","required":true,"secret":false},
		{"name":"production","type":"boolean","required":false,"secret":false},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"push-expo","kind":"push","label":"Push (Expo)","fields":[
		{"name":"accessToken","type":"string","required":false,"secret":true},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"chat-teams","kind":"chat","label":"Chat (Microsoft Teams webhook)","fields":[
		{"name":"webhookUrl","type":"string","required":true,"secret":true},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"chat-discord","kind":"chat","label":"Chat (Discord webhook)","fields":[
		{"name":"webhookUrl","type":"string","required":true,"secret":true},
		{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},
		{"channelKey":"webhook","kind":"webhook","label":"Webhook","fields":[
		{"name":"url","type":"string","required":true,"secret":false},
		{"name":"secret","type":"string","required":false,"secret":true}]},
		{"channelKey":"in-app","kind":"in_app","label":"In-app inbox","fields":[]}]`
	var got, exp any
	r.JSON(t, &got)
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	eb, _ := json.Marshal(exp)
	if string(gb) != string(eb) {
		t.Fatalf("catalog\n got %s\nwant %s", gb, eb)
	}
	if r := h.Do("GET", "/v1/channels/catalog", "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("catalog without a key: %d", r.Status)
	}
}

func TestChannelCreateAndRepeat(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	if got := listChannels(t, h, key); len(got) != 0 {
		t.Fatalf("new tenant has channels: %+v", got)
	}

	r := h.Do("POST", "/v1/channels", key, smtpChannel("pw-1", map[string]any{"priority": 4}))
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	created := safeViewOf(t, r.Body)
	if created.ChannelKey != "email-smtp" || created.Kind != "email" || created.Label != "Email (SMTP)" ||
		!created.Enabled || created.Priority != 4 || !created.Configured {
		t.Fatalf("created view %+v", created)
	}
	if _, err := time.Parse(time.RFC3339, created.CreatedAt); err != nil || len(created.CreatedAt) != len("2006-01-02T15:04:05.000Z") {
		t.Fatalf("createdAt %q", created.CreatedAt)
	}
	if got := listChannels(t, h, key); len(got) != 1 || got[0] != created {
		t.Fatalf("list after create: %+v", got)
	}

	// Switch it off, then repeat the POST: same channel, re-enabled,
	// config replaced, priority kept when omitted, createdAt kept.
	if r := h.Do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"enabled": false}); r.Status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	time.Sleep(5 * time.Millisecond)
	repeat := smtpChannel("pw-2", nil)
	repeat["config"].(map[string]any)["host"] = "relay.example.com"
	r = h.Do("POST", "/v1/channels", key, repeat)
	if r.Status != http.StatusCreated {
		t.Fatalf("repeat: %d %s", r.Status, r.Body)
	}
	again := safeViewOf(t, r.Body)
	if again != created {
		t.Fatalf("repeat view %+v, want %+v", again, created)
	}
	if got := listChannels(t, h, key); len(got) != 1 || got[0] != created {
		t.Fatalf("list after repeat: %+v", got)
	}
	ch, err := h.Store().Channel(tenant, "email-smtp")
	if err != nil || ch.Public["host"] != "relay.example.com" || !ch.UpdatedAt.After(ch.CreatedAt) {
		t.Fatalf("stored after repeat: %v host=%v", err, ch.Public["host"])
	}

	// A repeat sets what it sends: priority, and enabled false.
	r = h.Do("POST", "/v1/channels", key, smtpChannel("pw-3", map[string]any{"priority": 0, "enabled": false}))
	if v := safeViewOf(t, r.Body); r.Status != http.StatusCreated || v.Enabled || v.Priority != 0 || v.CreatedAt != created.CreatedAt {
		t.Fatalf("repeat with enabled false: %d %s", r.Status, r.Body)
	}
	// Defaults of a create: enabled true, priority 0.
	h2tenant, key2 := h.Tenant("Other")
	r = h.Do("POST", "/v1/channels", key2, smtpChannel("pw", nil))
	if v := safeViewOf(t, r.Body); r.Status != http.StatusCreated || !v.Enabled || v.Priority != 0 {
		t.Fatalf("defaults: %d %s", r.Status, r.Body)
	}
	if _, err := h.Store().Channel(h2tenant, "email-smtp"); err != nil {
		t.Fatal(err)
	}
}

func TestChannelValidation(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	withConfig := func(change func(cfg map[string]any)) map[string]any {
		body := smtpChannel("pw", nil)
		change(body["config"].(map[string]any))
		return body
	}
	cases := []struct {
		name   string
		body   any
		status int
		code   string
		fields []string
	}{
		{"unknown channelKey", map[string]any{"channelKey": "sms-nowhere", "config": map[string]any{}}, 404, "unknown_channel", nil},
		{"unknown channelKey, no config", `{"channelKey":"nope"}`, 404, "unknown_channel", nil},
		{"case-sensitive channelKey", map[string]any{"channelKey": "Email-SMTP", "config": map[string]any{}}, 404, "unknown_channel", nil},
		{"no channelKey", map[string]any{"config": map[string]any{}}, 422, "validation_failed", []string{"channelKey"}},
		{"no config", `{"channelKey":"email-smtp"}`, 422, "validation_failed", []string{"config"}},
		{"config null", `{"channelKey":"email-smtp","config":null}`, 422, "validation_failed", []string{"config"}},
		{"config not an object", `{"channelKey":"email-smtp","config":[1]}`, 422, "validation_failed", []string{"config"}},
		{"unknown config field", withConfig(func(c map[string]any) { c["smtpPort"] = 25 }), 422, "validation_failed", []string{"config.smtpPort"}},
		{"missing required field", withConfig(func(c map[string]any) { delete(c, "host") }), 422, "validation_failed", []string{"config.host"}},
		{"wrong type", withConfig(func(c map[string]any) { c["port"] = "587" }), 422, "validation_failed", []string{"config.port"}},
		{"boolean as a string", withConfig(func(c map[string]any) { c["secure"] = "true" }), 422, "validation_failed", []string{"config.secure"}},
		{"password not a string", withConfig(func(c map[string]any) { c["password"] = 1234 }), 422, "validation_failed", []string{"config.password"}},
		{"port out of range", withConfig(func(c map[string]any) { c["port"] = 70000 }), 422, "validation_failed", []string{"config.port"}},
		{"every problem at once", withConfig(func(c map[string]any) {
			delete(c, "fromEmail")
			c["port"] = true
			c["bogus"] = 1
		}), 422, "validation_failed", []string{"config.port", "config.fromEmail", "config.bogus"}},
		{"negative priority", smtpChannel("pw", map[string]any{"priority": -1}), 422, "validation_failed", []string{"priority"}},
		{"fractional priority", smtpChannel("pw", map[string]any{"priority": 1.5}), 422, "validation_failed", []string{"priority"}},
		{"priority as a string", smtpChannel("pw", map[string]any{"priority": "1"}), 422, "validation_failed", []string{"priority"}},
		{"enabled as a string", smtpChannel("pw", map[string]any{"enabled": "yes"}), 422, "validation_failed", []string{"enabled"}},
		{"unknown top-level field", smtpChannel("pw", map[string]any{"Priority": 1}), 422, "validation_failed", []string{"Priority"}},
		{"malformed JSON", `{"channelKey":`, 400, "invalid_json", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.Do("POST", "/v1/channels", key, c.body)
			if r.Status != c.status || r.ErrorCode() != c.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if got := problems(t, r); !slices.Equal(got, c.fields) {
				t.Fatalf("fields %v, want %v (%s)", got, c.fields, r.Body)
			}
		})
	}
	body := withConfig(func(c map[string]any) { c["port"] = "x" })
	body["priority"] = -3
	r := h.Do("POST", "/v1/channels", key, body)
	if got := problems(t, r); r.Status != 422 || !slices.Equal(got, []string{"priority", "config.port"}) {
		t.Fatalf("priority and config: %d %s", r.Status, r.Body)
	}
	if got := listChannels(t, h, key); len(got) != 0 {
		t.Fatalf("a refused POST created a channel: %+v", got)
	}
	// Optional fields may be left out.
	r = h.Do("POST", "/v1/channels", key, map[string]any{"channelKey": "email-smtp",
		"config": map[string]any{"host": "localhost", "port": 1025, "fromEmail": "dev@localhost.test"}})
	if r.Status != http.StatusCreated {
		t.Fatalf("minimal config: %d %s", r.Status, r.Body)
	}
}

func TestChannelPatch(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	stored := func() projections.Channel {
		t.Helper()
		ch, err := h.Store().Channel(tenant, "email-smtp")
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	if r := h.Do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"enabled": false}); r.Status != 404 {
		t.Fatalf("patch before create: %d %s", r.Status, r.Body)
	}
	r := h.Do("POST", "/v1/channels", key, smtpChannel("pw", map[string]any{"priority": 2}))
	created := safeViewOf(t, r.Body)
	before := stored()

	// enabled alone leaves the config untouched.
	r = h.Do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"enabled": false})
	if v := safeViewOf(t, r.Body); r.Status != 200 || v.Enabled || v.Priority != 2 || v.CreatedAt != created.CreatedAt {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	after := stored()
	pb, _ := json.Marshal([]any{before.Public, before.Sealed})
	pa, _ := json.Marshal([]any{after.Public, after.Sealed})
	if string(pa) != string(pb) {
		t.Fatal("an enabled-only patch changed the config")
	}

	// config replaces the whole config: fields left out are gone.
	r = h.Do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"config": map[string]any{
		"host": "localhost", "port": 1025, "fromEmail": "dev@localhost.test"}})
	if v := safeViewOf(t, r.Body); r.Status != 200 || v.Enabled || !v.Configured {
		t.Fatalf("replace config: %d %s", r.Status, r.Body)
	}
	ch := stored()
	if len(ch.Public) != 3 || ch.Public["host"] != "localhost" || len(ch.Sealed) != 0 {
		t.Fatalf("config after replace: public keys %d sealed %d", len(ch.Public), len(ch.Sealed))
	}
	// Both at once.
	r = h.Do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"enabled": true, "config": smtpChannel("pw2", nil)["config"]})
	if v := safeViewOf(t, r.Body); r.Status != 200 || !v.Enabled {
		t.Fatalf("both: %d %s", r.Status, r.Body)
	}
	if ch := stored(); len(ch.Sealed) != 1 || ch.Public["fromName"] != "Acme" {
		t.Fatalf("config after second replace: %d sealed", len(ch.Sealed))
	}

	cases := []struct {
		name, path string
		body       any
		status     int
		code       string
		fields     []string
	}{
		{"empty object", "/v1/channels/email-smtp", `{}`, 400, "empty_patch", nil},
		{"empty body", "/v1/channels/email-smtp", nil, 400, "empty_patch", nil},
		{"nulls only", "/v1/channels/email-smtp", `{"enabled":null}`, 400, "empty_patch", nil},
		{"unknown channel key", "/v1/channels/sms-twilio", map[string]any{"enabled": true}, 404, "channel_not_found", nil},
		{"bad config", "/v1/channels/email-smtp", map[string]any{"config": map[string]any{"host": "x", "port": "25"}}, 422,
			"validation_failed", []string{"config.port", "config.fromEmail"}},
		{"config null", "/v1/channels/email-smtp", `{"config":null}`, 422, "validation_failed", []string{"config"}},
		{"unknown field", "/v1/channels/email-smtp", map[string]any{"enabled": true, "priority": 1}, 422, "validation_failed", []string{"priority"}},
		{"enabled wrong type", "/v1/channels/email-smtp", `{"enabled":"false"}`, 422, "validation_failed", []string{"enabled"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.Do("PATCH", c.path, key, c.body)
			if r.Status != c.status || r.ErrorCode() != c.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if got := problems(t, r); !slices.Equal(got, c.fields) {
				t.Fatalf("fields %v, want %v", got, c.fields)
			}
		})
	}
	if ch := stored(); len(ch.Sealed) != 1 || !ch.Enabled {
		t.Fatal("a refused PATCH changed the channel")
	}
}

func TestChannelDelete(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	if r := h.Do("DELETE", "/v1/channels/email-smtp", key, nil); r.Status != 404 {
		t.Fatalf("delete before create: %d %s", r.Status, r.Body)
	}
	first := safeViewOf(t, h.Do("POST", "/v1/channels", key, smtpChannel("pw", map[string]any{"priority": 9})).Body)
	r := h.Do("DELETE", "/v1/channels/email-smtp", key, nil)
	if r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if got := listChannels(t, h, key); len(got) != 0 {
		t.Fatalf("list after delete: %+v", got)
	}
	if r := h.Do("DELETE", "/v1/channels/email-smtp", key, nil); r.Status != 404 {
		t.Fatalf("second delete: %d", r.Status)
	}
	if r := h.Do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"enabled": true}); r.Status != 404 {
		t.Fatalf("patch after delete: %d", r.Status)
	}
	if r := h.Do("DELETE", "/v1/channels/nope", key, nil); r.Status != 404 {
		t.Fatalf("delete of a key not in the catalog: %d", r.Status)
	}
	// A POST after a delete is a new channel: defaults, new createdAt.
	time.Sleep(5 * time.Millisecond)
	again := safeViewOf(t, h.Do("POST", "/v1/channels", key, smtpChannel("pw", nil)).Body)
	if again.Priority != 0 || again.CreatedAt == first.CreatedAt {
		t.Fatalf("re-created %+v after %+v", again, first)
	}
}

func TestChannelTenantIsolation(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenantA, keyA := h.Tenant("Acme")
	_, keyB := h.Tenant("Other")
	if r := h.Do("POST", "/v1/channels", keyA, smtpChannel("pw-a", map[string]any{"priority": 3})); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if got := listChannels(t, h, keyB); len(got) != 0 {
		t.Fatalf("B sees A's channels: %+v", got)
	}
	if r := h.Do("PATCH", "/v1/channels/email-smtp", keyB, map[string]any{"enabled": false}); r.Status != 404 {
		t.Fatalf("B patched A's channel: %d", r.Status)
	}
	if r := h.Do("DELETE", "/v1/channels/email-smtp", keyB, nil); r.Status != 404 {
		t.Fatalf("B deleted A's channel: %d", r.Status)
	}
	// B's own channel of the same key is B's alone.
	if r := h.Do("POST", "/v1/channels", keyB, smtpChannel("pw-b", map[string]any{"enabled": false})); r.Status != 201 {
		t.Fatalf("B create: %d", r.Status)
	}
	if r := h.Do("DELETE", "/v1/channels/email-smtp", keyB, nil); r.Status != 204 {
		t.Fatalf("B delete: %d", r.Status)
	}
	got := listChannels(t, h, keyA)
	if len(got) != 1 || !got[0].Enabled || got[0].Priority != 3 {
		t.Fatalf("A's channel after B's writes: %+v", got)
	}
	if _, err := h.Store().Channel(tenantA, "email-smtp"); err != nil {
		t.Fatal(err)
	}
}
