// Package delivery owns Herald's channels and sends: the catalog of channel
// types a tenant may enable and the JSON Schema of their config, the
// choice of the channel a send uses, the delivery ledger and the providers
// (delivery/smtp).
//
// # One road for a send
//
// A send is a [Request] (the engine builds one per send step; POST
// /v1/deliver decodes its body into one) and ends in a [Result] or an
// error. [Service.Deliver] delivers in the process that holds the
// service; [Client.Deliver] reaches another process's service through POST
// /v1/deliver and answers as that service would. Either error is read with
// [Classify]: its code, and whether it is terminal (the run fails) or
// transient (the step is retried with the same key).
//
// The service selects the channel from the projections ([SelectChannels])
// and opens its sealed config with the keyring ([OpenChannelConfig]); it
// depends on no command layer.
package delivery
