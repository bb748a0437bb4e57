package events

// Channel and Bridge binding event types.
//
// Channel events live on the subject of the aggregate channel with the
// channel's catalog key as id (eventlog.Subject(tenant, AggChannel,
// channelKey)); the Bridge binding on the aggregate bridge with the tenant
// id as id (eventlog.Subject(tenant, AggBridge, tenant)).
const (
	// ChannelConfigured: POST /v1/channels created a channel or, on a
	// repeat, replaced its config and set enabled and priority.
	ChannelConfigured = "ChannelConfigured"
	// ChannelUpdated: PATCH /v1/channels/{key} replaced the config, set
	// enabled, or both.
	ChannelUpdated = "ChannelUpdated"
	// ChannelDeleted: DELETE /v1/channels/{key}.
	ChannelDeleted = "ChannelDeleted"
	// ChannelInboundRotated: POST /v1/channels/{key}/inbound-token gave
	// the channel a new inbound generation: the inbound URLs shown before
	// stop opening.
	ChannelInboundRotated = "ChannelInboundRotated"
	// BridgeConfigured: PUT /v1/bridge registered the Bridge URL with a new
	// signing secret.
	BridgeConfigured = "BridgeConfigured"
)

// ChannelConfig is a channel's config as the log holds it: the catalog
// entry's public fields as sent, and its Secret fields sealed one by one
// (see ChannelSecretAAD). A field absent from the config is absent from
// both maps.
type ChannelConfig struct {
	// Public holds the non-secret fields, JSON values as sent.
	Public map[string]any `json:"public"`
	// Sealed maps a secret field's name to its sealed value
	// (secrets.Keyring.Seal), never the value in clear.
	Sealed map[string]string `json:"sealed"`
}

// ChannelConfiguredData is the payload of ChannelConfigured. It carries
// the channel's whole resulting state: a repeat replaces the config and
// sets Enabled and Priority to these values (the writer resolved an
// omitted priority to the current one). A repeat keeps the channel's
// creation time.
type ChannelConfiguredData struct {
	ChannelKey string        `json:"channelKey"`
	Kind       string        `json:"kind"`
	Config     ChannelConfig `json:"config"`
	Enabled    bool          `json:"enabled"`
	Priority   int           `json:"priority"`
}

// ChannelUpdatedData is the payload of ChannelUpdated. A nil field is
// left as it was; a set Config replaces the whole config.
type ChannelUpdatedData struct {
	ChannelKey string         `json:"channelKey"`
	Config     *ChannelConfig `json:"config,omitempty"`
	Enabled    *bool          `json:"enabled,omitempty"`
}

// ChannelDeletedData is the payload of ChannelDeleted.
type ChannelDeletedData struct {
	ChannelKey string `json:"channelKey"`
}

// ChannelInboundRotatedData is the payload of ChannelInboundRotated.
// Generation is random and alone opens nothing: an inbound token is
// sealed by the service's keys over (tenant, channel, generation).
type ChannelInboundRotatedData struct {
	ChannelKey string `json:"channelKey"`
	Generation string `json:"generation"`
}

// BridgeConfiguredData is the payload of BridgeConfigured. Each one
// replaces the binding: the newest signing secret is the only valid one.
type BridgeConfiguredData struct {
	WebhookURL string `json:"webhookUrl"`
	// SealedSecret is the signing secret sealed with BridgeSecretAAD.
	SealedSecret string `json:"sealedSecret"`
}

// ChannelSecretAAD is the additional data a channel's secret field is
// sealed with: "<tenant>/channel/<channelKey>/<field>". It binds the sealed
// value to its tenant, channel and field, so a value copied anywhere else
// does not open. Tenant ids, catalog keys and field names hold no "/".
func ChannelSecretAAD(tenant, channelKey, field string) []byte {
	return []byte(tenant + "/channel/" + channelKey + "/" + field)
}

// BridgeSecretAAD is the additional data a tenant's Bridge signing secret
// is sealed with: "<tenant>/bridge/signingSecret".
func BridgeSecretAAD(tenant string) []byte {
	return []byte(tenant + "/bridge/signingSecret")
}
