package delivery

import (
	"encoding/json"
	"maps"
	"testing"
)

func TestCatalogJSON(t *testing.T) {
	got, err := json.Marshal(Catalog())
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"channelKey":"email-smtp","kind":"email","label":"Email (SMTP)","fields":[` +
		`{"name":"host","type":"string","required":true,"secret":false},` +
		`{"name":"port","type":"number","required":true,"secret":false},` +
		`{"name":"secure","type":"boolean","required":false,"secret":false},` +
		`{"name":"username","type":"string","required":false,"secret":false},` +
		`{"name":"password","type":"string","required":false,"secret":true},` +
		`{"name":"fromEmail","type":"string","required":true,"secret":false},` +
		`{"name":"fromName","type":"string","required":false,"secret":false},` +
		`{"name":"allowInsecureAuth","type":"boolean","required":false,"secret":false}]}]`
	if string(got) != want {
		t.Fatalf("catalog JSON\n got %s\nwant %s", got, want)
	}
}

func TestCatalogInvariants(t *testing.T) {
	keys := map[string]bool{}
	for _, e := range Catalog() {
		if keys[e.ChannelKey] {
			t.Errorf("channel key %q repeated", e.ChannelKey)
		}
		keys[e.ChannelKey] = true
		names := map[string]bool{}
		for _, f := range e.Fields {
			if names[f.Name] {
				t.Errorf("%s: field %q repeated", e.ChannelKey, f.Name)
			}
			names[f.Name] = true
			if f.Secret && f.Type != TypeString {
				t.Errorf("%s: secret field %q is not a string", e.ChannelKey, f.Name)
			}
		}
	}
}

func TestCatalogReturnsCopies(t *testing.T) {
	c := Catalog()
	c[0].Label = "changed"
	c[0].Fields[0].Name = "changed"
	*c[0].Fields[1].Check.Max = 1
	e, _ := LookupChannel("email-smtp")
	e.Fields[0].Required = false

	again, ok := LookupChannel("email-smtp")
	if !ok || again.Label != "Email (SMTP)" || again.Fields[0].Name != "host" || !again.Fields[0].Required ||
		*again.Fields[1].Check.Max != 65535 {
		t.Fatalf("the catalog changed through a copy: %+v", again)
	}
}

func TestLookupChannel(t *testing.T) {
	if e, ok := LookupChannel("email-smtp"); !ok || e.Kind != "email" || len(e.Fields) != 8 {
		t.Fatalf("LookupChannel(email-smtp) = %+v, %v", e, ok)
	}
	for _, key := range []string{"", "EMAIL-SMTP", "sms-twilio"} {
		if e, ok := LookupChannel(key); ok {
			t.Errorf("LookupChannel(%q) = %+v, true", key, e)
		}
	}
}

func TestSplitSecretsAndMerge(t *testing.T) {
	e, _ := LookupChannel("email-smtp")
	config := map[string]any{"host": "smtp.example.com", "port": 587.0, "username": "ada", "password": "hunter2", "fromEmail": "ada@example.com"}
	original := maps.Clone(config)

	public, secret := e.SplitSecrets(config)
	if _, ok := public["password"]; ok {
		t.Fatalf("public holds the password: %v", public)
	}
	if want := map[string]any{"host": "smtp.example.com", "port": 587.0, "username": "ada", "fromEmail": "ada@example.com"}; !maps.Equal(public, want) {
		t.Fatalf("public = %v; want %v", public, want)
	}
	if want := map[string]string{"password": "hunter2"}; !maps.Equal(secret, want) {
		t.Fatalf("secret = %v; want %v", secret, want)
	}
	if !maps.Equal(config, original) {
		t.Fatalf("SplitSecrets changed its argument: %v", config)
	}

	merged := e.Merge(public, secret)
	if !maps.Equal(merged, original) {
		t.Fatalf("Merge = %v; want %v", merged, original)
	}
	if _, ok := public["password"]; ok {
		t.Fatalf("Merge changed its argument: %v", public)
	}
}

func TestSplitSecretsEdges(t *testing.T) {
	e, _ := LookupChannel("email-smtp")

	public, secret := e.SplitSecrets(nil)
	if public == nil || secret == nil || len(public)+len(secret) != 0 {
		t.Fatalf("SplitSecrets(nil) = %v, %v; want two empty maps", public, secret)
	}
	// No password configured: nothing secret.
	if _, secret := e.SplitSecrets(map[string]any{"host": "h"}); len(secret) != 0 {
		t.Fatalf("secret = %v; want empty", secret)
	}
	// A non-string secret (unvalidated config) goes nowhere.
	public, secret = e.SplitSecrets(map[string]any{"password": 1234.0})
	if len(public) != 0 || len(secret) != 0 {
		t.Fatalf("non-string password: public %v, secret %v; want both empty", public, secret)
	}
	// Merge takes only the entry's secret fields from secrets.
	got := e.Merge(nil, map[string]string{"password": "p", "host": "evil", "other": "x"})
	if want := map[string]any{"password": "p"}; !maps.Equal(got, want) {
		t.Fatalf("Merge = %v; want %v", got, want)
	}
}
