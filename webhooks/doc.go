// Package webhooks delivers outbound webhooks (CONTRACT §14): the events
// of the log a tenant's endpoints subscribe to, POSTed as Standard
// Webhooks, at least once, retried with backoff for 24 h.
//
// Durable JetStream consumers, shared by every herald process, carry the
// work:
//
//   - the sources (herald-webhooks-source-<tenant>-run, -delivery and
//     -inbox) follow the run, delivery and inbox subjects of one tenant
//     on the EVENTS stream, headers only, one consumer of a single filter
//     subject each (a consumer of several filters makes the NATS server
//     search its stream per message). They exist only while the tenant
//     has an endpoint (see follow.go): the events of a tenant without
//     endpoints are read by no herald process. They start at the event
//     after the tenant's oldest endpoint's creation. For each event that
//     maps to a webhook event type some endpoint of the tenant subscribes
//     to, the dispatcher reads the event and publishes one work message
//     per subscribed, enabled endpoint of the tenant (and per inbox
//     message of an inbox mark) on work.webhook.<tenant>.<endpoint>,
//     de-duplicated by the message id, then acknowledges the event. An
//     endpoint is sent the events stored after its creation.
//   - the sender (herald-webhooks) takes those work messages. Each message
//     is one (endpoint, event) pair: its body is rendered when it is sent,
//     from the local projections (the resource as the API shows it then),
//     signed with the endpoint's secrets and POSTed. A 2xx within 10 s is
//     delivered; a failure is retried through a scheduled message on the
//     WORK stream (sched.<tenant>.webhook.<message id>), first after the
//     retry base, doubling, capped at 1 h, while the next try falls within
//     24 h of the event. Every HTTP attempt is recorded as a
//     WebhookAttempted event.
//
// Isolation: a process sends at most perEndpoint messages to one endpoint
// at once. A message for an endpoint at its limit goes back to the stream
// with a short delay instead of waiting in a worker, so a slow endpoint
// holds at most perEndpoint sends of each process and never the messages
// of another endpoint or tenant.
//
// The webhook-id of a message is derived from the endpoint, the event and
// (for inbox marks) the inbox message: the same on every attempt, and on
// a repeat of the message after a crash.
package webhooks
