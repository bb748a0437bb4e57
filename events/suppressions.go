package events

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Suppression event types. A suppression is an address of a channel kind
// that sends must skip (reason "suppressed"). Its events live on the
// subject of the aggregate suppression with SuppressionID(kind, address)
// as id: the address itself may be longer than a subject allows (a push
// token), so the id holds its digest.
const (
	// SuppressionAdded: the address was suppressed, by PUT
	// /v1/suppressions/{kind}/{address} or by a provider's answer that it
	// does not exist (reason hard_bounce). On an address already
	// suppressed it replaces the reason and keeps the creation time.
	SuppressionAdded = "SuppressionAdded"
	// SuppressionRemoved: DELETE /v1/suppressions/{kind}/{address}.
	SuppressionRemoved = "SuppressionRemoved"
	// SuppressionErased: the suppressed address was a contact of a
	// subscriber erased since. The suppression stays in force, matched by
	// the digest its subject names, and its address is forgotten: the
	// events before this one on the subject, which held it, are
	// secure-deleted.
	SuppressionErased = "SuppressionErased"
)

// Reasons of a suppression the service itself gives; a tenant may give
// any other (bounded) reason.
const (
	// SuppressionManual is the reason of a PUT without one.
	SuppressionManual = "manual"
	// SuppressionHardBounce: a provider answered that the address does
	// not exist (an SMTP 5.1.1-class rejection of the recipient).
	SuppressionHardBounce = "hard_bounce"
	// SuppressionComplaint: the recipient marked a message as spam, as
	// the provider reported (DeliveryReported, status complained).
	SuppressionComplaint = "complaint"
)

// SuppressionAddedData is the payload of SuppressionAdded. Address is
// normalised (delivery.NormalizeAddress): the form sends compare.
type SuppressionAddedData struct {
	Kind    string `json:"kind"`
	Address string `json:"address"`
	Reason  string `json:"reason"`
	// AttemptID is the delivery attempt whose rejection (or the
	// provider's later report of it) added a hard_bounce or complaint
	// suppression; empty otherwise.
	AttemptID string `json:"attemptId,omitempty"`
}

// SuppressionRemovedData is the payload of SuppressionRemoved.
type SuppressionRemovedData struct {
	Kind    string `json:"kind"`
	Address string `json:"address"`
}

// SuppressionErasedData is the payload of SuppressionErased: the
// suppression without its address. Digest is the hex SHA-256 part of its
// SuppressionID; Reason and CreatedAt are those it had.
type SuppressionErasedData struct {
	Kind      string    `json:"kind"`
	Digest    string    `json:"digest"`
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"createdAt"`
}

// SuppressionID is the subject id of the suppression of a normalised
// address of kind: "<kind>:<hex SHA-256 of the address>".
func SuppressionID(kind, address string) string {
	return kind + ":" + SuppressionDigest(address)
}

// SuppressionDigest is the hex SHA-256 of a normalised address.
func SuppressionDigest(address string) string {
	sum := sha256.Sum256([]byte(address))
	return hex.EncodeToString(sum[:])
}
