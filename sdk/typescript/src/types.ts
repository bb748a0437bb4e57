// The values a workflow reads and builds: the protocol's own JSON shapes.

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** The channel kinds a send step delivers on. */
export type ChannelKind = "email" | "sms" | "chat" | "push" | "in_app" | "webhook";

/** The content of an email. `html` and `text` together make a multipart/alternative message; `body` alone is sent as HTML when it looks like HTML, as text otherwise. */
export interface EmailContent {
  subject: string;
  body?: string;
  html?: string;
  text?: string;
  replyTo?: string;
  /** The tenant's email layout the HTML part is wrapped in: a layout id, or null for none. Absent: the tenant's default layout, if one is marked. */
  layout?: string | null;
}

/** The content of a text message. */
export interface SmsContent {
  body: string;
}

/** The content of a chat message; `blocks` is the chat provider's rich layout (Slack Block Kit), passed as it is. */
export interface ChatContent {
  body: string;
  blocks?: JsonValue[];
}

/** The content of a push notification; `data` is the provider's key-value payload. */
export interface PushContent {
  title: string;
  body: string;
  data?: Record<string, string>;
}

/** An in-app message's button. */
export interface InAppAction {
  label: string;
  url: string;
}

/** The content of an in-app inbox message. */
export interface InAppContent {
  subject?: string;
  body: string;
  data?: JsonValue;
  primaryAction?: InAppAction;
}

/** The content of a webhook send: `data` is posted as the message's data. */
export interface WebhookContent {
  data: JsonValue;
}

/** The content each channel kind takes. */
export interface ContentByKind {
  email: EmailContent;
  sms: SmsContent;
  chat: ChatContent;
  push: PushContent;
  in_app: InAppContent;
  webhook: WebhookContent;
}

/** Why the service skipped a send. */
export type SkipReason = "no_address" | "preference" | "suppressed";

/**
 * The output of a send step: the delivery the service recorded. A skipped
 * send (no address of the kind, opted out, suppressed) completes the step
 * too, with its `reason`; the run goes on.
 */
export interface SendResult {
  attemptId: string;
  status: "sent" | "skipped";
  reason?: SkipReason;
  providerMessageId?: string;
  /** When the send was held by the subscriber's quiet hours: when it went out (RFC 3339). */
  heldUntil?: string;
}

/** One trigger gathered by a digest. */
export interface DigestEvent<P = Record<string, unknown>> {
  payload: P;
  runId: string;
  at: string;
}

/** The output of a digest step: `count` includes the run that opened it; events are oldest first. */
export interface DigestResult<P = Record<string, unknown>> {
  count: number;
  events: DigestEvent<P>[];
}

/** The output of a throttle step: `count` runs reached the step within the window, this one included; `throttled` is count > limit. */
export interface ThrottleResult {
  throttled: boolean;
  count: number;
}

/** The run's recipient as of the run's start, the same on every execution of the run. */
export interface Subscriber {
  subscriberId: string;
  contacts?: Record<string, string[]>;
  locale?: string;
  /** An IANA time zone name, when the subscriber has one. */
  timezone?: string;
  attributes?: Record<string, unknown>;
}

/** The subscriber's unsubscribe and preference page URLs for the workflow; `unsubscribe` is null for a critical workflow. */
export interface Links {
  unsubscribe: string | null;
  preferences: string;
}

/** A completed step of a run, as the service sends it back. */
export interface CompletedStep {
  stepId: string;
  type: string;
  output: unknown;
}

/** The body of an execute request: a run as its Bridge sees it. */
export interface ExecuteRequest {
  action?: "execute";
  workflowId?: string;
  runId?: string;
  payload?: Record<string, unknown> | null;
  subscriber?: Subscriber | null;
  steps?: CompletedStep[] | null;
  links?: Links | null;
  /** The values of each step's controls, resolved when the run started (step id → object). */
  controls?: Record<string, Record<string, unknown>> | null;
  /** The locale the controls were resolved for. */
  locale?: string;
}

/** A step a Bridge answers with (the `step` of a 200 execute answer). */
export type StepAnswer = { stepId: string; type: string } & Record<string, unknown>;

/** The 200 answer to an execute (or preview) request. */
export type ExecuteAnswer =
  | { status: "completed" }
  | { status: "step"; step: StepAnswer }
  | { status: "preview_needs"; stepId: string };
