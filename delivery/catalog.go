package delivery

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"

	"github.com/heraldhq/herald/delivery/inbound"
)

// Field types of a catalog entry. They are also the JSON Schema types of the
// fields.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
)

// Field declares one key of a channel's config. Name, Type, Required and
// Secret are the catalog's public view (GET /v1/channels/catalog); Default
// and Check only shape the entry's JSON Schema.
type Field struct {
	// Name is the config key, case-sensitive.
	Name string `json:"name"`
	// Type is TypeString, TypeNumber or TypeBoolean.
	Type string `json:"type"`
	// Required fields must be present in every config.
	Required bool `json:"required"`
	// Secret fields are stored sealed and never returned; they must be of
	// TypeString (see CatalogEntry.SplitSecrets).
	Secret bool `json:"secret"`
	// Default is the value a provider assumes when an optional field is
	// absent, published as the schema's "default". nil means none. It is not
	// written into stored configs.
	Default any `json:"-"`
	// Check narrows the values Type admits; the zero Check adds nothing.
	Check Check `json:"-"`
	// Dest says whether the field's value names a place Herald connects
	// to, and how to read its host: the egress policy checks every one
	// when the channel is configured (see [CatalogEntry.Destinations]),
	// and again at every connection. The zero Dest names none.
	Dest Dest `json:"-"`
}

// Dest is how a config field names a destination: a place a provider
// connects to on the tenant's behalf.
type Dest int

const (
	// NoDest: the value names no destination.
	NoDest Dest = iota
	// DestHost: the value is a host, a DNS name or an IP literal (the
	// SMTP host).
	DestHost
	// DestURL: the value is an http(s) URL whose host is connected to (a
	// provider's base URL, the webhook channel's url).
	DestURL
	// DestServiceAccount: the value is a Google service account JSON key
	// whose token_uri, when present, is where access tokens are fetched.
	DestServiceAccount
)

// Destination is one place a channel's config makes Herald connect to.
type Destination struct {
	// Field is the config key that names it.
	Field string
	// Member is what inside the field's value names it ("token_uri"), or
	// "" for the value itself.
	Member string
	// Host is the host to connect to as written: a DNS name or an IP
	// literal in any spelling (the egress package reads it).
	Host string
}

// Destinations returns every destination config names, in field order: one
// for each field of e with a Dest whose value holds one. A value that does
// not hold a readable host (an absent token_uri: the provider's default) gives none; the
// schema or the provider refuses a malformed one.
func (e CatalogEntry) Destinations(config map[string]any) []Destination {
	var out []Destination
	for _, f := range e.Fields {
		v, ok := config[f.Name].(string)
		if !ok || f.Dest == NoDest {
			continue
		}
		d := Destination{Field: f.Name}
		switch f.Dest {
		case DestHost:
			d.Host = v
		case DestURL:
			d.Host = urlHost(v)
		case DestServiceAccount:
			var sa struct {
				TokenURI string `json:"token_uri"`
			}
			if json.Unmarshal([]byte(v), &sa) != nil || sa.TokenURI == "" {
				continue
			}
			d.Member, d.Host = "token_uri", urlHost(sa.TokenURI)
		}
		out = append(out, d)
	}
	return out
}

// urlHost is the host of an http(s) URL, or "" (refused by the egress
// check) when raw is none.
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return u.Hostname()
}

// Check holds the simple constraints a field may add to its type. Each is
// written into the entry's JSON Schema, so the schema alone decides what is
// valid. Checks that do not fit the field's Type are ignored.
type Check struct {
	// Integer admits whole numbers only ("multipleOf": 1). Number fields.
	Integer bool
	// Min and Max are inclusive bounds ("minimum", "maximum"); nil is
	// unbounded. Number fields.
	Min, Max *float64
	// NonEmpty refuses the empty string ("minLength": 1). String fields.
	NonEmpty bool
	// Email admits a bare address such as ada@example.com ("format": "email"
	// and a pattern refusing display names and white space). String fields.
	Email bool
	// Pattern is a regular expression (ECMA 262, as JSON Schema reads it)
	// the whole value must match ("pattern"); Means words the problem of a
	// value that does not, without quoting it. String fields.
	Pattern, Means string
}

// Patterns of catalog fields.
const (
	// baseURLPattern: scheme://host[:port] of http or https, no path, no
	// user info: the base a provider's documented path is appended to.
	baseURLPattern = `^https?://[^/?#@\s]+$`
	baseURLMeans   = "must be an http(s) URL of a scheme and a host (and port), with no path"
	// urlPattern: an absolute http(s) URL with a host, no user info.
	urlPattern = `^https?://[^/?#@\s]+([/?#]\S*)?$`
	urlMeans   = "must be an absolute http(s) URL"
	// whsecPattern: a Standard Webhooks signing secret, whsec_ and base64.
	whsecPattern = `^whsec_[A-Za-z0-9+/]+={0,2}$`
	whsecMeans   = "must be whsec_ followed by the base64 of the key"
	// domainPattern: a domain name, labels of letters, digits and
	// hyphens joined by dots (the sending domain of a Mailgun account).
	domainPattern = `^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$`
	domainMeans   = "must be a domain name such as mg.example.com"
	// appleIDPattern: an Apple developer team id or key id, ten capital
	// letters and digits.
	appleIDPattern = `^[A-Z0-9]{10}$`
	appleIDMeans   = "must be 10 capital letters and digits, as Apple's developer account shows it"
	// regionPattern: an AWS region name such as eu-west-1.
	regionPattern = `^[a-z]{2}(-[a-z]+)+-[0-9]+$`
	regionMeans   = "must be an AWS region such as eu-west-1"
	topicArnMeans = "must be an SNS topic ARN such as arn:aws:sns:eu-west-1:123456789012:ses-events"
)

// baseURL is the optional field replacing a provider's base URL.
func baseURL(name string) Field {
	return Field{Name: name, Type: TypeString, Check: Check{Pattern: baseURLPattern, Means: baseURLMeans}, Dest: DestURL}
}

// secret is a required secret string.
func secret(name string) Field {
	return Field{Name: name, Type: TypeString, Required: true, Secret: true, Check: Check{NonEmpty: true}}
}

// optionalSecret is an optional secret string.
func optionalSecret(name string) Field {
	return Field{Name: name, Type: TypeString, Secret: true, Check: Check{NonEmpty: true}}
}

// webhookURL is the URL of a provider's incoming webhook: required, a
// destination, and secret, for its path holds the webhook's token.
func webhookURL(name string) Field {
	return Field{Name: name, Type: TypeString, Required: true, Secret: true,
		Check: Check{Pattern: urlPattern, Means: urlMeans}, Dest: DestURL}
}

// fromEmail is the sender's bare address of an email provider.
var fromEmail = Field{Name: "fromEmail", Type: TypeString, Required: true, Check: Check{Email: true}}

// required is a required non-empty string.
func required(name string) Field {
	return Field{Name: name, Type: TypeString, Required: true, Check: Check{NonEmpty: true}}
}

// serviceAccount is FCM's Google service account key: its token_uri is a
// destination.
var serviceAccount = func() Field {
	f := secret("serviceAccountJson")
	f.Dest = DestServiceAccount
	return f
}()

// CatalogEntry declares a channel type a tenant may enable: its key, the kind
// of address it delivers to (the key of a subscriber's contacts) and the
// fields its config holds, in display order. The field list is the source of
// truth for the config: see [CatalogEntry.Schema] and
// [CatalogEntry.Validate].
type CatalogEntry struct {
	ChannelKey string  `json:"channelKey"`
	Kind       string  `json:"kind"`
	Label      string  `json:"label"`
	Fields     []Field `json:"fields"`
}

// catalog is every channel type Herald offers. Catalog and LookupChannel hand
// out copies, so nothing outside this file can change it.
var catalog = []CatalogEntry{
	{
		ChannelKey: "email-smtp",
		Kind:       "email",
		Label:      "Email (SMTP)",
		Fields: []Field{
			{Name: "host", Type: TypeString, Required: true, Check: Check{NonEmpty: true}, Dest: DestHost},
			{Name: "port", Type: TypeNumber, Required: true, Check: Check{Integer: true, Min: new(1.0), Max: new(65535.0)}},
			{Name: "secure", Type: TypeBoolean, Default: false},
			{Name: "username", Type: TypeString},
			{Name: "password", Type: TypeString, Secret: true},
			{Name: "fromEmail", Type: TypeString, Required: true, Check: Check{Email: true}},
			{Name: "fromName", Type: TypeString},
			{Name: "allowInsecureAuth", Type: TypeBoolean, Default: false},
		},
	},
	{
		ChannelKey: "email-ses",
		Kind:       KindEmail,
		Label:      "Email (Amazon SES)",
		Fields: []Field{
			{Name: "region", Type: TypeString, Required: true, Check: Check{Pattern: regionPattern, Means: regionMeans}},
			required("accessKeyId"),
			secret("secretAccessKey"),
			{Name: "fromEmail", Type: TypeString, Required: true, Check: Check{Email: true}},
			{Name: "fromName", Type: TypeString},
			baseURL("endpoint"),
			// The SNS topic of the SES events: the only one whose
			// messages the inbound URL hears.
			{Name: "topicArn", Type: TypeString, Check: Check{Pattern: inbound.TopicArnPattern, Means: topicArnMeans}},
		},
	},
	{
		ChannelKey: "email-postmark",
		Kind:       KindEmail,
		Label:      "Email (Postmark)",
		Fields: []Field{secret("serverToken"), fromEmail, {Name: "fromName", Type: TypeString},
			{Name: "messageStream", Type: TypeString, Check: Check{NonEmpty: true}}, baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "email-sendgrid",
		Kind:       KindEmail,
		Label:      "Email (SendGrid)",
		Fields: []Field{secret("apiKey"), fromEmail, {Name: "fromName", Type: TypeString},
			{Name: "webhookPublicKey", Type: TypeString, Check: Check{NonEmpty: true}}, baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "email-mailgun",
		Kind:       KindEmail,
		Label:      "Email (Mailgun)",
		Fields: []Field{secret("apiKey"),
			{Name: "domain", Type: TypeString, Required: true, Check: Check{Pattern: domainPattern, Means: domainMeans}},
			fromEmail, {Name: "fromName", Type: TypeString}, optionalSecret("webhookSigningKey"), baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "email-resend",
		Kind:       KindEmail,
		Label:      "Email (Resend)",
		Fields: []Field{
			secret("apiKey"),
			{Name: "fromEmail", Type: TypeString, Required: true, Check: Check{Email: true}},
			{Name: "fromName", Type: TypeString},
			// webhookSecret is the signing secret of the Resend webhook
			// that posts to the channel's inbound URL.
			{Name: "webhookSecret", Type: TypeString, Secret: true, Check: Check{Pattern: whsecPattern, Means: whsecMeans}},
			baseURL("apiBaseUrl"),
		},
	},
	{
		ChannelKey: "sms-twilio",
		Kind:       KindSMS,
		Label:      "SMS (Twilio)",
		Fields:     []Field{required("accountSid"), secret("authToken"), required("from"), baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "sms-vonage",
		Kind:       KindSMS,
		Label:      "SMS (Vonage)",
		Fields: []Field{required("apiKey"), secret("apiSecret"), required("from"), optionalSecret("signatureSecret"),
			baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "chat-slack",
		Kind:       KindChat,
		Label:      "Chat (Slack)",
		Fields:     []Field{secret("botToken"), baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "push-fcm",
		Kind:       KindPush,
		Label:      "Push (Firebase Cloud Messaging)",
		Fields:     []Field{serviceAccount, baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "push-apns",
		Kind:       KindPush,
		Label:      "Push (Apple Push Notification service)",
		Fields: []Field{
			{Name: "teamId", Type: TypeString, Required: true, Check: Check{Pattern: appleIDPattern, Means: appleIDMeans}},
			{Name: "keyId", Type: TypeString, Required: true, Check: Check{Pattern: appleIDPattern, Means: appleIDMeans}},
			secret("privateKey"), required("topic"), {Name: "production", Type: TypeBoolean, Default: false},
			baseURL("apiBaseUrl"),
		},
	},
	{
		ChannelKey: "push-expo",
		Kind:       KindPush,
		Label:      "Push (Expo)",
		Fields:     []Field{optionalSecret("accessToken"), baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "chat-teams",
		Kind:       KindChat,
		Label:      "Chat (Microsoft Teams webhook)",
		Fields:     []Field{webhookURL("webhookUrl"), baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "chat-discord",
		Kind:       KindChat,
		Label:      "Chat (Discord webhook)",
		Fields:     []Field{webhookURL("webhookUrl"), baseURL("apiBaseUrl")},
	},
	{
		ChannelKey: "webhook",
		Kind:       KindWebhook,
		Label:      "Webhook",
		Fields: []Field{
			{Name: "url", Type: TypeString, Required: true, Check: Check{Pattern: urlPattern, Means: urlMeans}, Dest: DestURL},
			{Name: "secret", Type: TypeString, Secret: true, Check: Check{Pattern: whsecPattern, Means: whsecMeans}},
		},
	},
	{
		ChannelKey: "in-app",
		Kind:       KindInApp,
		Label:      "In-app inbox",
		Fields:     []Field{},
	},
}

// Catalog returns every catalog entry, in a fixed order. The result is a
// fresh deep copy on each call: the caller may change it freely.
func Catalog() []CatalogEntry {
	out := make([]CatalogEntry, len(catalog))
	for i, e := range catalog {
		out[i] = e.clone()
	}
	return out
}

// LookupChannel returns a copy of the catalog entry with the given channel
// key, and whether there is one. Keys are case-sensitive.
func LookupChannel(key string) (CatalogEntry, bool) {
	i := slices.IndexFunc(catalog, func(e CatalogEntry) bool { return e.ChannelKey == key })
	if i < 0 {
		return CatalogEntry{}, false
	}
	return catalog[i].clone(), true
}

// clone copies e deeply enough that no change to the copy reaches e.
func (e CatalogEntry) clone() CatalogEntry {
	e.Fields = slices.Clone(e.Fields)
	for i := range e.Fields {
		c := &e.Fields[i].Check
		c.Min, c.Max = clonePtr(c.Min), clonePtr(c.Max)
	}
	return e
}

func clonePtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	return new(*p)
}

// SplitSecrets separates a config that passed [CatalogEntry.Validate] into
// what may be stored and shown as is (public) and the values of the entry's
// Secret fields (secret), which the caller seals before storing. Keys absent
// from config are absent from both results. A secret field holding anything
// but a string (possible only for an unvalidated config) is left out of both
// results, never put in public. config itself is not changed.
func (e CatalogEntry) SplitSecrets(config map[string]any) (public map[string]any, secret map[string]string) {
	public = maps.Clone(config)
	if public == nil {
		public = map[string]any{}
	}
	secret = map[string]string{}
	for _, f := range e.Fields {
		if !f.Secret {
			continue
		}
		v, ok := public[f.Name]
		if !ok {
			continue
		}
		delete(public, f.Name)
		if s, ok := v.(string); ok {
			secret[f.Name] = s
		}
	}
	return public, secret
}

// Merge is the inverse of [CatalogEntry.SplitSecrets]: it returns a new map
// holding public and, for each Secret field of e present in secrets, its
// opened value. Keys of secrets that are not Secret fields of e are ignored,
// so a value opened for one field never lands in another. The arguments are
// not changed.
func (e CatalogEntry) Merge(public map[string]any, secrets map[string]string) map[string]any {
	config := maps.Clone(public)
	if config == nil {
		config = map[string]any{}
	}
	for _, f := range e.Fields {
		if v, ok := secrets[f.Name]; ok && f.Secret {
			config[f.Name] = v
		}
	}
	return config
}
