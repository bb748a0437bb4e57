package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
	"github.com/heraldhq/herald/service"
)

func channelEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// keyringOf loads the keyring of h's data directory dir, as the service does
// with env (embedded: whether it may create the key file), and a Control
// that opens secrets with it.
func keyringOf(t *testing.T, h *testherald.Herald, env map[string]string, dir string, embedded bool) (*secrets.Keyring, *control.Control) {
	t.Helper()
	kr, _, err := secrets.LoadKeyring(channelEnv(env), dir, embedded)
	if err != nil {
		t.Fatal(err)
	}
	return kr, control.New(control.Config{Log: h.Log(), Store: h.Store(), Keys: kr})
}

// stored reads tenant's channel channelKey as h's projections hold it
// (sealed), and its config opened with kr.
func stored(t *testing.T, h *testherald.Herald, kr *secrets.Keyring, tenant, channelKey string) (projections.Channel, map[string]any, error) {
	t.Helper()
	ch, err := h.Store().Channel(tenant, channelKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := delivery.OpenChannelConfig(kr, tenant, ch)
	return ch, cfg, err
}

// TestChannelSecretsNeverInClear drives every channel and Bridge call
// with distinctive secrets, then looks for them in every response body,
// every log line, every raw message of the event stream and every file
// under the data directory.
func TestChannelSecretsNeverInClear(t *testing.T) {
	const (
		password1 = "Pw1-herald-zebra-quartz-7f3c19"
		password2 = "Pw2-herald-orchid-lumen-88ad2e"
	)
	logs := &testlog.Buffer{}
	dir := t.TempDir()
	h := testherald.Start(t, testherald.Options{DataDir: dir,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	tenant, key := h.Tenant("Acme")
	_, otherKey := h.Tenant("Other")

	var bodies []testherald.Response
	do := func(method, path, key string, body any, status int) testherald.Response {
		t.Helper()
		r := h.Do(method, path, key, body)
		if r.Status != status {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		bodies = append(bodies, r)
		return r
	}
	do("POST", "/v1/channels", key, smtpChannel(password1, nil), 201)
	do("POST", "/v1/channels", key, smtpChannel(password1, map[string]any{"priority": 2}), 201)
	do("POST", "/v1/channels", otherKey, smtpChannel(password1, nil), 201)
	do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"config": smtpChannel(password2, nil)["config"]}, 200)
	do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"enabled": false}, 200)
	do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"enabled": true}, 200)
	do("GET", "/v1/channels", key, nil, 200)
	do("GET", "/v1/channels/catalog", key, nil, 200)
	do("DELETE", "/v1/channels/email-smtp", otherKey, nil, 204)
	// Refused requests that carry the password must not echo it.
	bad := smtpChannel(password1, nil)
	bad["config"].(map[string]any)["port"] = password1
	bad["config"].(map[string]any)["passwrd"] = password1
	do("POST", "/v1/channels", key, bad, 422)
	do("POST", "/v1/channels", key, map[string]any{"channelKey": password1, "config": map[string]any{"password": password1}}, 404)
	do("POST", "/v1/channels", key, smtpChannel(password1, map[string]any{"priority": password1}), 422)
	do("POST", "/v1/channels", key, `{"channelKey":"email-smtp","config":{"password":"`+password1+`"`, 400)
	do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"config": map[string]any{"password": password1}}, 422)
	do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"config": map[string]any{"password": password1}, "bogus": password1}, 422)

	// Every other catalog entry, with a distinctive value in each secret
	// field: created, patched, refused with the secret in a wrong field.
	entrySecrets, urlSecrets := map[string]string{}, map[string]string{}
	for _, e := range delivery.Catalog() {
		if e.ChannelKey == "email-smtp" {
			continue
		}
		config := otherEntryConfig(e.ChannelKey)
		for _, f := range e.Fields {
			if f.Secret {
				v := "Sec-" + e.ChannelKey + "-" + f.Name + "-c0ffee91"
				if strings.HasPrefix(f.Check.Pattern, "^whsec_") {
					v = "whsec_" + base64.StdEncoding.EncodeToString([]byte(v))
				}
				if f.Dest != delivery.NoDest {
					// A secret URL (a chat webhook): its path is the
					// secret part, which must not show on its own either.
					urlSecrets[e.ChannelKey+"."+f.Name+" path"] = v
					v = "http://127.0.0.1:9/" + v
				}
				config[f.Name] = v
				entrySecrets[e.ChannelKey+"."+f.Name] = v
			}
		}
		do("POST", "/v1/channels", key, map[string]any{"channelKey": e.ChannelKey, "config": config}, 201)
		do("PATCH", "/v1/channels/"+e.ChannelKey, key, map[string]any{"config": config}, 200)
		for name, v := range entrySecrets {
			if strings.HasPrefix(name, e.ChannelKey+".") {
				bad := map[string]any{}
				for k, x := range config {
					bad[k] = x
				}
				bad["notAField"] = v
				do("POST", "/v1/channels", key, map[string]any{"channelKey": e.ChannelKey, "config": bad}, 422)
			}
		}
	}
	if len(entrySecrets) < 5 {
		t.Fatalf("secret fields of the other entries: %v", entrySecrets)
	}
	do("GET", "/v1/channels", key, nil, 200)
	// A send on each of their kinds (email's SMTP password is the delivery
	// package's leak test): answers and ledger rows.
	do("PUT", "/v1/subscribers/every-kind", key, map[string]any{"contacts": map[string]any{
		"sms": []string{"+15550100"}, "chat": []string{"C0123ABCD"}, "push": []string{"device-token"}}}, 201)
	client := delivery.NewClient(h.URL(), h.InternalToken(), 1)
	var answers []byte
	for kind, content := range map[string]string{"sms": `{"body":"b"}`, "chat": `{"body":"b"}`,
		"push": `{"title":"t","body":"b"}`, "in_app": `{"body":"b"}`, "webhook": `{"data":{"x":1}}`} {
		res, err := client.Deliver(context.Background(), tenant, delivery.Request{IdempotencyKey: "run_s:" + kind,
			RunID: "run_s", StepID: kind, SubscriberID: "every-kind", Channel: kind, Content: []byte(content)})
		answers = fmt.Appendf(answers, "%s: %+v %v\n", kind, res, err)
	}
	if !bytes.Contains(answers, []byte("in_app: {AttemptID:att_")) {
		t.Fatalf("sends: %s", answers)
	}
	bodies = append(bodies, testherald.Response{Body: answers})
	do("GET", "/v1/deliveries?runId=run_s", key, nil, 200)

	var reg struct{ SigningSecret string }
	do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "https://bridge.example.com/h"}, 200).JSON(t, &reg)
	signing1 := reg.SigningSecret
	do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "https://bridge.example.com/h"}, 200).JSON(t, &reg)
	signing2 := reg.SigningSecret
	do("GET", "/v1/bridge", key, nil, 200)

	all := map[string]string{"password1": password1, "password2": password2, "signing1": signing1, "signing2": signing2}
	passwords := map[string]string{"password1": password1, "password2": password2}
	for name, v := range entrySecrets {
		all[name], passwords[name] = v, v
	}
	for name, v := range urlSecrets {
		all[name], passwords[name] = v, v
	}

	// Response bodies: no password ever; a signing secret only in the
	// answer of the PUT that generated it.
	for _, r := range bodies {
		want := passwords
		if !bytes.Contains(r.Body, []byte(`"signingSecret"`)) {
			want = all
		}
		if found := testlog.Leaks(r.Body, want); len(found) > 0 {
			t.Errorf("a response body holds %v: %s", found, r.Body)
		}
	}

	// The secrets are kept (sealed): the delivery path and the engine can
	// open the newest ones.
	kr, ctl := keyringOf(t, h, nil, dir, true)
	if _, cfg, err := stored(t, h, kr, tenant, "email-smtp"); err != nil || cfg["password"] != password2 {
		t.Fatalf("opening the stored config: %v", err)
	}
	for name, v := range entrySecrets {
		channelKey, field, _ := strings.Cut(name, ".")
		if _, cfg, err := stored(t, h, kr, tenant, channelKey); err != nil || cfg[field] != v {
			t.Fatalf("opening the stored %s: %v", name, err)
		}
	}
	if _, s, err := ctl.BridgeSecret(context.Background(), tenant); err != nil || s != signing2 {
		t.Fatalf("opening the stored signing secret: %v", err)
	}

	// The raw bytes of every message of the event stream, headers included.
	ctx := context.Background()
	stream, err := h.Log().JetStream().Stream(ctx, eventlog.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := h.Log().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sealedSeen int
	for seq := uint64(1); seq <= last; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("event #%d: %v", seq, err)
		}
		raw := bytes.Clone(m.Data)
		for k, vs := range m.Header {
			raw = append(raw, k...)
			for _, v := range vs {
				raw = append(raw, v...)
			}
		}
		if found := testlog.Leaks(raw, all); len(found) > 0 {
			t.Errorf("event #%d holds %v in clear: %s", seq, found, m.Data)
		}
		sealedSeen += bytes.Count(m.Data, []byte(`"v1:`))
	}
	if sealedSeen < 5 { // three channel configs, one patch, two registrations
		t.Fatalf("only %d sealed values in the event stream: the scan saw nothing", sealedSeen)
	}

	// Every log line, at debug level.
	h.Stop()
	logged := logs.Bytes()
	if !bytes.Contains(logged, []byte("/v1/channels")) {
		t.Fatalf("the captured log holds no request line: %s", logged)
	}
	if found := testlog.Leaks(logged, all); len(found) > 0 {
		t.Errorf("the log holds %v", found)
	}

	// Every file under the data directory but the key and token files.
	skip := map[string]bool{secrets.MasterKeyFile: true, service.AdminTokenFile: true, service.InternalTokenFile: true}
	var (
		scanned    int
		withSealed []string
	)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Dir(path) == dir && skip[d.Name()]) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		// The stream's message blocks and projections.db hold sealed values.
		if bytes.Contains(data, []byte(`":"v1:`)) {
			withSealed = append(withSealed, strings.TrimPrefix(path, dir))
		}
		if found := testlog.Leaks(data, all); len(found) > 0 {
			t.Errorf("%s holds %v", strings.TrimPrefix(path, dir), found)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(withSealed) < 2 || !slices.Contains(withSealed, "/"+service.ProjectionsFile) {
		t.Fatalf("scanned %d files, sealed values in %v only: the scan saw nothing", scanned, withSealed)
	}
}

// otherEntryConfig is a valid config of a catalog entry other than
// email-smtp, without its secret fields; its endpoints are loopback.
func otherEntryConfig(channelKey string) map[string]any {
	switch channelKey {
	case "email-ses":
		return map[string]any{"region": "eu-west-1", "accessKeyId": "AKIAEXAMPLE", "fromEmail": "no-reply@example.com",
			"endpoint": "http://127.0.0.1:9"}
	case "sms-twilio":
		return map[string]any{"accountSid": "AC0123", "from": "+15550100", "apiBaseUrl": "http://127.0.0.1:9"}
	case "chat-slack", "push-fcm", "push-expo":
		return map[string]any{"apiBaseUrl": "http://127.0.0.1:9"}
	case "email-postmark", "email-sendgrid":
		return map[string]any{"fromEmail": "no-reply@example.com", "apiBaseUrl": "http://127.0.0.1:9"}
	case "email-mailgun":
		return map[string]any{"domain": "mg.example.com", "fromEmail": "no-reply@example.com", "apiBaseUrl": "http://127.0.0.1:9"}
	case "sms-vonage":
		return map[string]any{"apiKey": "a1b2c3d4", "from": "Acme", "apiBaseUrl": "http://127.0.0.1:9"}
	case "push-apns":
		return map[string]any{"teamId": "ABCDE12345", "keyId": "KEY1234567", "topic": "com.example.app", "apiBaseUrl": "http://127.0.0.1:9"}
	case "webhook":
		return map[string]any{"url": "http://127.0.0.1:9/hook"}
	case "email-resend":
		return map[string]any{"fromEmail": "no-reply@example.com", "apiBaseUrl": "http://127.0.0.1:9"}
	}
	return map[string]any{}
}

// TestChannelSecretsAcrossMasterKeyRotation: values sealed under key A
// still open once key B is current (A listed as previous), and a write
// seals with B. The projections are rebuilt from the log in between.
func TestChannelSecretsAcrossMasterKeyRotation(t *testing.T) {
	keyA := bytes.Repeat([]byte{0xA1}, secrets.KeySize)
	keyB := bytes.Repeat([]byte{0xB2}, secrets.KeySize)
	envA := map[string]string{secrets.EnvMasterKey: base64.StdEncoding.EncodeToString(keyA)}
	envB := map[string]string{secrets.EnvMasterKey: base64.StdEncoding.EncodeToString(keyB),
		secrets.EnvPreviousKeys: base64.StdEncoding.EncodeToString(keyA)}
	const password = "rotation-P4ss-3e9d"
	dir := t.TempDir()

	h := testherald.Start(t, testherald.Options{DataDir: dir, Env: envA})
	tenant, key := h.Tenant("Acme")
	if r := h.Do("POST", "/v1/channels", key, smtpChannel(password, nil)); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var reg struct{ SigningSecret string }
	h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "https://b.example.com/"}).JSON(t, &reg)
	h.Stop()
	if err := os.Remove(filepath.Join(dir, service.ProjectionsFile)); err != nil {
		t.Fatal(err)
	}

	h = testherald.Start(t, testherald.Options{DataDir: dir, Env: envB})
	kr, ctl := keyringOf(t, h, envB, dir, false)
	ch, cfg, err := stored(t, h, kr, tenant, "email-smtp")
	if !strings.HasPrefix(ch.Sealed["password"], "v1:"+secrets.KeyID(keyA)+":") {
		t.Fatal("the password was not sealed with key A")
	}
	if err != nil || cfg["password"] != password {
		t.Fatalf("value sealed with A after B became current: %v", err)
	}
	if _, s, err := ctl.BridgeSecret(context.Background(), tenant); err != nil || s != reg.SigningSecret {
		t.Fatalf("signing secret sealed with A: %v", err)
	}
	// A write through the restarted service seals with B.
	if r := h.Do("PATCH", "/v1/channels/email-smtp", key, map[string]any{"config": smtpChannel(password, nil)["config"]}); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	ch, cfg, err = stored(t, h, kr, tenant, "email-smtp")
	if !strings.HasPrefix(ch.Sealed["password"], "v1:"+secrets.KeyID(keyB)+":") {
		t.Fatal("the service did not seal with the new current key")
	}
	if err != nil || cfg["password"] != password {
		t.Fatalf("value sealed with B: %v", err)
	}
}
