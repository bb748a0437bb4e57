// Package delivery owns Herald's channels and sends: the catalog of channel
// types a tenant may enable and the JSON Schema of their config, the
// content each kind of send carries, the order in which the channels of a
// kind are tried, the decision of each send, and the delivery ledger.
// Providers are outside it: package delivery/provider is the contract,
// delivery/smtp and the other provider packages implement it, and
// delivery/providers is the registry a server passes in
// ([Config].Providers).
//
// # One road for a send
//
// A send is a [Request] (the engine builds one per send step; POST
// /v1/deliver decodes its body into one) and ends in a [Result] (sent, or
// skipped with a reason) or an error. [Service.Deliver] delivers in the
// process that holds the service; [Client.Deliver] reaches another
// process's service through POST /v1/deliver and answers as that service
// would. Either error is read with [Classify]: its code, and whether it is
// terminal (the run fails) or transient (the step is retried with the same
// key).
//
// What a send does is decided once, by [Decide], from one read of the
// projections: send, skip (with a reason), hold for the recipient's quiet
// hours (until when), or fail without a channel ([Decision]). The engine
// asks it before every send and hands the decision to Deliver in the
// Request; the explain route ([Service.Explain]) shows it; nothing is
// recorded.
//
// The service lists the channels of the kind from the projections
// ([SelectChannels]), opens each one's sealed config with the keyring
// ([OpenChannelConfig]) and builds its provider; it depends on no command
// layer. Providers fail in one of three ways (provider.ErrNotSent,
// ErrOutcomeUnknown, ErrRejected), and the kind alone decides failover.
//
// # Suppressions
//
// A send whose address the tenant suppressed is skipped
// ([ReasonSuppressed]); addresses are compared in the form
// [NormalizeAddress] gives. A rejection marked provider.ErrBadAddress (the
// address does not exist) suppresses the address with reason hard_bounce,
// an event on the log like the tenant's own PUT.
package delivery
