package events

// Tenant and API key event types.
const (
	TenantCreated = "TenantCreated"
	APIKeyCreated = "APIKeyCreated"
	APIKeyRevoked = "APIKeyRevoked"
)

// TenantCreatedData is the payload of TenantCreated, on the tenant subject.
type TenantCreatedData struct {
	TenantID string `json:"tenantId"`
	Name     string `json:"name"`
}

// APIKeyCreatedData is the payload of APIKeyCreated, on the key's subject
// (aggregate apikey, id = prefix). Only the prefix and the SHA-256 of the
// whole key are recorded.
type APIKeyCreatedData struct {
	Prefix string `json:"prefix"`
	// Hash is the lowercase hex SHA-256 of the raw key.
	Hash string `json:"hash"`
}

// APIKeyRevokedData is the payload of APIKeyRevoked.
type APIKeyRevokedData struct {
	Prefix string `json:"prefix"`
}
