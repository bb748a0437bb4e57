package delivery

import (
	"encoding/json"
	"maps"
	"strings"
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
		`{"name":"allowInsecureAuth","type":"boolean","required":false,"secret":false}]},` +
		`{"channelKey":"email-ses","kind":"email","label":"Email (Amazon SES)","fields":[` +
		`{"name":"region","type":"string","required":true,"secret":false},` +
		`{"name":"accessKeyId","type":"string","required":true,"secret":false},` +
		`{"name":"secretAccessKey","type":"string","required":true,"secret":true},` +
		`{"name":"fromEmail","type":"string","required":true,"secret":false},` +
		`{"name":"fromName","type":"string","required":false,"secret":false},` +
		`{"name":"endpoint","type":"string","required":false,"secret":false},` +
		`{"name":"topicArn","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"email-postmark","kind":"email","label":"Email (Postmark)","fields":[` +
		`{"name":"serverToken","type":"string","required":true,"secret":true},` +
		`{"name":"fromEmail","type":"string","required":true,"secret":false},` +
		`{"name":"fromName","type":"string","required":false,"secret":false},` +
		`{"name":"messageStream","type":"string","required":false,"secret":false},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"email-sendgrid","kind":"email","label":"Email (SendGrid)","fields":[` +
		`{"name":"apiKey","type":"string","required":true,"secret":true},` +
		`{"name":"fromEmail","type":"string","required":true,"secret":false},` +
		`{"name":"fromName","type":"string","required":false,"secret":false},` +
		`{"name":"webhookPublicKey","type":"string","required":false,"secret":false},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"email-mailgun","kind":"email","label":"Email (Mailgun)","fields":[` +
		`{"name":"apiKey","type":"string","required":true,"secret":true},` +
		`{"name":"domain","type":"string","required":true,"secret":false},` +
		`{"name":"fromEmail","type":"string","required":true,"secret":false},` +
		`{"name":"fromName","type":"string","required":false,"secret":false},` +
		`{"name":"webhookSigningKey","type":"string","required":false,"secret":true},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"email-resend","kind":"email","label":"Email (Resend)","fields":[` +
		`{"name":"apiKey","type":"string","required":true,"secret":true},` +
		`{"name":"fromEmail","type":"string","required":true,"secret":false},` +
		`{"name":"fromName","type":"string","required":false,"secret":false},` +
		`{"name":"webhookSecret","type":"string","required":false,"secret":true},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"sms-twilio","kind":"sms","label":"SMS (Twilio)","fields":[` +
		`{"name":"accountSid","type":"string","required":true,"secret":false},` +
		`{"name":"authToken","type":"string","required":true,"secret":true},` +
		`{"name":"from","type":"string","required":true,"secret":false},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"sms-vonage","kind":"sms","label":"SMS (Vonage)","fields":[` +
		`{"name":"apiKey","type":"string","required":true,"secret":false},` +
		`{"name":"apiSecret","type":"string","required":true,"secret":true},` +
		`{"name":"from","type":"string","required":true,"secret":false},` +
		`{"name":"signatureSecret","type":"string","required":false,"secret":true},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"chat-slack","kind":"chat","label":"Chat (Slack)","fields":[` +
		`{"name":"botToken","type":"string","required":true,"secret":true},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"push-fcm","kind":"push","label":"Push (Firebase Cloud Messaging)","fields":[` +
		`{"name":"serviceAccountJson","type":"string","required":true,"secret":true},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"push-apns","kind":"push","label":"Push (Apple Push Notification service)","fields":[` +
		`{"name":"teamId","type":"string","required":true,"secret":false},` +
		`{"name":"keyId","type":"string","required":true,"secret":false},` +
		`{"name":"privateKey","type":"string","required":true,"secret":true},` +
		`{"name":"topic","type":"string","required":true,"secret":false},` +
		`{"name":"production","type":"boolean","required":false,"secret":false},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"push-expo","kind":"push","label":"Push (Expo)","fields":[` +
		`{"name":"accessToken","type":"string","required":false,"secret":true},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"chat-teams","kind":"chat","label":"Chat (Microsoft Teams webhook)","fields":[` +
		`{"name":"webhookUrl","type":"string","required":true,"secret":true},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"chat-discord","kind":"chat","label":"Chat (Discord webhook)","fields":[` +
		`{"name":"webhookUrl","type":"string","required":true,"secret":true},` +
		`{"name":"apiBaseUrl","type":"string","required":false,"secret":false}]},` +
		`{"channelKey":"webhook","kind":"webhook","label":"Webhook","fields":[` +
		`{"name":"url","type":"string","required":true,"secret":false},` +
		`{"name":"secret","type":"string","required":false,"secret":true}]},` +
		`{"channelKey":"in-app","kind":"in_app","label":"In-app inbox","fields":[]}]`
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
			if f.Dest != NoDest && f.Type != TypeString {
				t.Errorf("%s: destination field %q is not a string", e.ChannelKey, f.Name)
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
	for _, key := range []string{"", "EMAIL-SMTP", "sms-nowhere"} {
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

// TestSecondWaveEntries: each entry of CONTRACT.md §10 validates the
// configs it should and refuses, by field, those it should not.
func TestSecondWaveEntries(t *testing.T) {
	for _, tc := range []struct {
		key    string
		config string
		want   []string // "field problem"s; none: valid
	}{
		{"email-ses", `{"region":"eu-west-1","accessKeyId":"AKIA1","secretAccessKey":"s","fromEmail":"a@x.io","endpoint":"http://127.0.0.1:4566"}`, nil},
		{"email-ses", `{"region":"Europe","accessKeyId":"","secretAccessKey":"s","fromEmail":"a@x.io","endpoint":"http://h/v2"}`,
			[]string{"config.region must be an AWS region such as eu-west-1", "config.accessKeyId must not be empty",
				"config.endpoint must be an http(s) URL of a scheme and a host (and port), with no path"}},
		{"email-ses", `{"region":"eu-west-1","accessKeyId":"AKIA1","secretAccessKey":"s","fromEmail":"a@x.io","topicArn":"arn:aws:sns:eu-west-1:123456789012:ses-events"}`, nil},
		{"email-ses", `{"region":"eu-west-1","accessKeyId":"AKIA1","secretAccessKey":"s","fromEmail":"a@x.io","topicArn":"arn:aws:s3:::ses-events"}`,
			[]string{"config.topicArn must be an SNS topic ARN such as arn:aws:sns:eu-west-1:123456789012:ses-events"}},
		{"sms-twilio", `{"accountSid":"AC1","authToken":"t","from":"+15550100","apiBaseUrl":"https://api.twilio.com"}`, nil},
		{"sms-twilio", `{"accountSid":"AC1"}`, []string{"config.authToken is required", "config.from is required"}},
		{"chat-slack", `{"botToken":"xoxb-1"}`, nil},
		{"chat-slack", `{"botToken":"xoxb-1","apiBaseUrl":"ftp://slack.com"}`,
			[]string{"config.apiBaseUrl must be an http(s) URL of a scheme and a host (and port), with no path"}},
		{"push-fcm", `{"serviceAccountJson":"{}","apiBaseUrl":"http://127.0.0.1:9000"}`, nil},
		{"push-fcm", `{}`, []string{"config.serviceAccountJson is required"}},
		{"webhook", `{"url":"https://hooks.example.com/herald?x=1","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, nil},
		{"webhook", `{"url":"https://user@hooks.example.com/","secret":"abc"}`,
			[]string{"config.url must be an absolute http(s) URL", "config.secret must be whsec_ followed by the base64 of the key"}},
		{"chat-teams", `{"webhookUrl":"https://prod-12.westeurope.logic.azure.com/workflows/1/triggers/manual/paths/invoke?sig=s"}`, nil},
		{"chat-teams", `{"webhookUrl":"teams"}`, []string{"config.webhookUrl must be an absolute http(s) URL"}},
		{"chat-discord", `{"webhookUrl":"https://discord.com/api/webhooks/1/t","apiBaseUrl":"https://discord.com/api"}`,
			[]string{"config.apiBaseUrl must be an http(s) URL of a scheme and a host (and port), with no path"}},
		{"email-postmark", `{"serverToken":"pm","fromEmail":"a@x.io","messageStream":"outbound"}`, nil},
		{"email-postmark", `{"fromEmail":"Ada <a@x.io>"}`, []string{"config.serverToken is required", "config.fromEmail must be an email address"}},
		{"email-sendgrid", `{"apiKey":"SG.x","fromEmail":"a@x.io","webhookPublicKey":"MFkw"}`, nil},
		{"email-sendgrid", `{"apiKey":"","fromEmail":"a@x.io"}`, []string{"config.apiKey must not be empty"}},
		{"email-mailgun", `{"apiKey":"key-1","domain":"mg.example.com","fromEmail":"a@x.io","webhookSigningKey":"k","apiBaseUrl":"https://api.eu.mailgun.net"}`, nil},
		{"email-mailgun", `{"apiKey":"key-1","domain":"mg.example.com/../x","fromEmail":"a@x.io"}`,
			[]string{"config.domain must be a domain name such as mg.example.com"}},
		{"sms-vonage", `{"apiKey":"a1b2","apiSecret":"s","from":"Acme","signatureSecret":"x"}`, nil},
		{"sms-vonage", `{"apiSecret":"s","from":"Acme"}`, []string{"config.apiKey is required"}},
		{"push-expo", `{}`, nil},
		{"push-expo", `{"accessToken":""}`, []string{"config.accessToken must not be empty"}},
		{"push-apns", `{"teamId":"ABCDE12345","keyId":"KEY1234567","privateKey":"-----BEGIN PRIVATE KEY-----","topic":"com.example.app","production":true}`, nil},
		{"push-apns", `{"teamId":"abc","keyId":"KEY1234567","privateKey":"k","topic":"t","production":"yes"}`,
			[]string{"config.teamId must be 10 capital letters and digits, as Apple's developer account shows it", "config.production must be a boolean"}},
		{"in-app", `{}`, nil},
		{"in-app", `{"x":1}`, []string{"config.x unknown field"}},
	} {
		e, ok := LookupChannel(tc.key)
		if !ok {
			t.Fatalf("%s is not in the catalog", tc.key)
		}
		var got []string
		for _, p := range e.Validate(t.Context(), []byte(tc.config)) {
			got = append(got, p.Field+" "+p.Problem)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s %s:\n got %q\nwant %q", tc.key, tc.config, got, tc.want)
		}
	}
}

func TestDestinations(t *testing.T) {
	fcm, _ := LookupChannel("push-fcm")
	got := fcm.Destinations(map[string]any{
		"serviceAccountJson": `{"client_email":"a@b.iam","token_uri":"https://0x7f000001:8443/token"}`,
		"apiBaseUrl":         "http://[::1]:8080",
	})
	want := []Destination{{Field: "serviceAccountJson", Member: "token_uri", Host: "0x7f000001"}, {Field: "apiBaseUrl", Host: "::1"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("push-fcm destinations = %+v, want %+v", got, want)
	}
	// No token_uri: Google's default, no destination of the tenant's.
	if got := fcm.Destinations(map[string]any{"serviceAccountJson": `{"client_email":"a@b.iam"}`}); len(got) != 0 {
		t.Fatalf("without token_uri: %+v", got)
	}
	// A token_uri that is no http(s) URL has no host: the egress check
	// refuses the empty host.
	got = fcm.Destinations(map[string]any{"serviceAccountJson": `{"token_uri":"file:///etc/passwd"}`})
	if len(got) != 1 || got[0].Host != "" {
		t.Fatalf("a file token_uri: %+v", got)
	}
	smtp, _ := LookupChannel("email-smtp")
	if got := smtp.Destinations(map[string]any{"host": "127.1", "port": 25.0}); len(got) != 1 || got[0] != (Destination{Field: "host", Host: "127.1"}) {
		t.Fatalf("email-smtp destinations = %+v", got)
	}
	if got := smtp.Destinations(map[string]any{}); len(got) != 0 {
		t.Fatalf("an empty config: %+v", got)
	}
}
