// A small tenant Bridge in TypeScript: the HTTP endpoint Herald calls to run
// the tenant's workflows. It serves, as the Go example (examples/bridge) does
// and under the same ids:
//
//   - welcome: look the subscriber up in a (stand-in) CRM, e-mail them, and
//     text them instead when they have no e-mail address.
//   - price_alert: a throttle: at most 3 e-mails an hour to one subscriber;
//     the runs over the limit send nothing.
//   - morning_tip: a delay until a local time: the e-mail goes when the
//     subscriber's clock next reads 09:00, in their time zone.
//   - activity_digest: a digest closed by a cron expression: the activity
//     gathered until 09:00 the subscriber's time, in one e-mail.
//   - invoice_paid: a payload schema: Herald refuses a trigger whose payload
//     does not match it (422 invalid_payload) and starts nothing.
//
// Run it with the signing secret that PUT /v1/bridge returned:
//
//	HERALD_SIGNING_SECRET=… make bridge-ts
//
// and register http://127.0.0.1:4000/ as the webhookUrl (every path is
// served). BRIDGE_PORT changes the port; ACTIVITY_DIGEST_CRON (default
// "0 9 * * *") when activity_digest sends.
import { serve, workflow, type Subscriber } from "@heraldhq/bridge";

/** What the CRM knows of a subscriber. */
interface Profile {
  firstName: string;
  plan: string;
}

// lookupProfile stands in for a call to a CRM or a database: I/O belongs in
// a run step.
async function lookupProfile(sub: Subscriber): Promise<Profile> {
  const attr = sub.attributes ?? {};
  return {
    firstName: typeof attr.firstName === "string" && attr.firstName ? attr.firstName : "there",
    plan: typeof attr.plan === "string" && attr.plan ? attr.plan : "free",
  };
}

export const welcome = workflow("welcome", async ({ step, subscriber }) => {
  if (!subscriber) throw new Error("welcome needs a subscriber");
  // A preview without a run shows the sample profile instead of calling the CRM.
  const p = await step.run("fetch-profile", () => lookupProfile(subscriber), { preview: { firstName: "Ada", plan: "pro" } });
  // step.email's content is an email's: a subject, html and text, a reply-to.
  // Its words are controls: teammates edit them per locale
  // (PUT /v1/workflows/welcome/controls/welcome-email?locale=fr), without a deploy.
  const mail = await step.email("welcome-email", ({ controls }) => ({
    subject: `${controls.subject}, ${p.firstName}!`,
    html: `<p>${escapeHTML(controls.greeting)} ${p.firstName},</p><p>Your <b>${p.plan}</b> plan is ready. Reply to this e-mail if you need a hand.</p>`,
    text: `${controls.greeting} ${p.firstName},\n\nYour ${p.plan} plan is ready. Reply to this e-mail if you need a hand.\n`,
  }));
  if (mail.status !== "skipped" || mail.reason !== "no_address") return; // sent, or they opted out
  // No e-mail address: a text instead (the tenant needs an sms channel).
  await step.sms("welcome-sms", () => ({ body: `Welcome to Acme, ${p.firstName}! Your ${p.plan} plan is ready.` }));
}, {
  controls: {
    "welcome-email": {
      type: "object",
      properties: {
        subject: { type: "string", minLength: 1, maxLength: 120, default: "Welcome to Acme" },
        greeting: { type: "string", minLength: 1, maxLength: 60, default: "Hi" },
      },
    },
  },
});

// escapeHTML escapes text a teammate wrote for an HTML body.
function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

// price_alert e-mails a price drop, at most 3 an hour to one subscriber. The
// throttle step counts the runs of this workflow for the subscriber that
// reached it within the last hour, this one included (Herald keeps the
// count: it survives restarts and is shared by every herald process); a run
// over the limit ends there, sending nothing.
export const priceAlert = workflow<{ product: string; price: string }>("price_alert", async ({ step, payload }) => {
  const t = await step.throttle("at-most-3-an-hour", { limit: 3, window: "1h" });
  if (t.throttled) return;
  await step.email("email", () => ({
    subject: `Price drop: ${payload.product} now ${payload.price}`,
    text: `${payload.product} is down to ${payload.price}.\n`,
  }));
}, { name: "Price alerts" });

// morning_tip waits until the subscriber's clock next reads 09:00 (or the
// payload's "at", "HH:MM"), in the time zone of their profile (UTC without
// one), then e-mails the tip. Herald picks the instant when the run reaches
// the delay and records it, so a replay or a restart never moves it.
export const morningTip = workflow<{ text: string; at?: string }>("morning_tip", async ({ step, payload }) => {
  await step.delay("until-morning", { localTime: payload.at || "09:00" });
  await step.email("email", () => ({ subject: "Your tip for today", text: `${payload.text}\n` }));
}, { name: "Tips" });

// activity_digest gathers a subscriber's activity into one e-mail at the
// next tick of the cron expression ("0 9 * * *": every morning at 9), read
// in the subscriber's time zone. The run that opens the window sends it;
// the runs that join end at the digest step (status digested).
const activityCron = process.env.ACTIVITY_DIGEST_CRON || "0 9 * * *";
export const activityDigest = workflow<{ actor: string; action: string }>("activity_digest", async ({ step }) => {
  const got = await step.digest<{ actor: string; action: string }>("gather", { cron: activityCron });
  await step.email("email", () => ({
    subject: `Your activity digest: ${got.count} updates`,
    text: got.events.map((e) => `${e.payload.actor} ${e.payload.action}`).join("\n") + "\n",
  }));
}, { name: "Activity digest" });

// invoice_paid e-mails a receipt. It trusts its payload's shape: after a
// sync Herald checks every trigger of the workflow against payloadSchema,
// answers 422 invalid_payload, naming each bad field, to a payload it
// refuses, and starts nothing.
export const invoicePaid = workflow<{ invoiceId: string; amount: number; currency: string }>("invoice_paid", async ({ step, payload }) => {
  await step.email("email", () => ({
    subject: `Receipt for invoice ${payload.invoiceId}`,
    text: `We received ${payload.amount.toFixed(2)} ${payload.currency} for invoice ${payload.invoiceId}. Thank you.\n`,
  }));
}, {
  name: "Receipts",
  payloadSchema: {
    type: "object",
    required: ["invoiceId", "amount", "currency"],
    properties: {
      invoiceId: { type: "string", minLength: 1 },
      amount: { type: "number", exclusiveMinimum: 0 },
      currency: { enum: ["EUR", "GBP", "USD"] },
    },
    additionalProperties: false,
  },
});

const secret = process.env.HERALD_SIGNING_SECRET;
if (!secret) {
  console.error("HERALD_SIGNING_SECRET is required: the signingSecret that PUT /v1/bridge returned");
  process.exit(1);
}
const port = Number(process.env.BRIDGE_PORT ?? 4000);
const workflows = [welcome, priceAlert, morningTip, activityDigest, invoicePaid];
const server = serve({ workflows, signingSecret: secret, port, host: "127.0.0.1" });
server.on("listening", () => console.log(`bridge: serving ${workflows.map((w) => w.id).join(", ")} on http://127.0.0.1:${port}/`));
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
