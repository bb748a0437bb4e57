// The workflows the shared wire fixtures (bridge/testdata/wire) name,
// defined as bridge/wirefixtures_test.go defines them for the Go SDK.
import { workflow, type Workflow } from "@heraldhq/bridge";

const fxSteps = workflow("fx_steps", async ({ step }) => {
  const user = await step.run("load", async () => ({ name: "Ada" }));
  await step.delay("pause", "30s");
  const c = await step.waitForEvent<{ by: string }>("confirm", { event: "confirmed", timeout: "1h" });
  await step.email("mail", () => ({ subject: "Hi " + user.name, body: c ? `Confirmed by ${c.by}.` : "Nobody confirmed." }));
  await step.digest("batch", { window: "10m", key: "k" });
});

const fxSchedule = workflow("fx_schedule", () => {}, {
  schedule: "0 9 * * *",
  critical: true,
  channels: { email: false, sms: true },
  payloadSchema: { type: "object", required: ["plan"] },
});

const fxKinds = workflow("fx_kinds", async ({ step }) => {
  await step.sms("sms", () => ({ body: "Your code is 1234" }), { to: "u2" });
  await step.chat("chat", () => ({
    body: "Deploy done",
    blocks: [{ type: "section", text: { type: "mrkdwn", text: "*Deploy* done" } }],
  }));
  await step.push("push", () => ({ title: "Order shipped", body: "Arrives Tuesday", data: { orderId: "o1" } }));
  await step.inApp("inbox", () => ({
    subject: "Invoice", body: "Your invoice is ready", primaryAction: { label: "Open", url: "https://example.com/i/1" },
  }));
  await step.webhook("hook", () => ({ data: { event: "invoice.ready", id: 1 } }));
});

const fxTime = workflow("fx_time", async ({ step }) => {
  await step.delay("until", { until: new Date(Date.UTC(2026, 0, 2, 9, 0, 0)) });
  await step.delay("morning", { localTime: "09:00" });
  await step.digest("weekday", { cron: "0 9 * * 1-5" });
});

const fxThrottle = workflow<{ key?: string }>("fx_throttle", async ({ step, payload }) => {
  const t = await step.throttle("cap", { limit: 3, window: "1h", key: payload.key ?? null });
  if (t.throttled) return;
  await step.email("mail", () => ({ subject: "Not throttled" }));
});

// fx_args calls a step with the invalid arguments its payload names.
const fxArgs = workflow<{ case?: string }>("fx_args", async ({ step, payload }) => {
  switch (payload.case) {
    case "limit":
      await step.throttle("bad", { limit: 0, window: "1h" });
      break;
    case "window":
      await step.throttle("bad", { limit: 3, window: "32d" });
      break;
    case "localTime":
      await step.delay("bad", { localTime: "9am" });
      break;
    case "cronAndWindow":
      await step.digest("bad", { window: "1m", cron: "@daily" } as any);
      break;
    case "emptyCron":
      await step.digest("bad", { cron: " " });
      break;
  }
});

const fxNamed = workflow("fx_named", () => {}, {
  name: "Weekly digest",
  description: "What happened in your projects this week, on Monday at 9.",
});

const fxZone = workflow("fx_zone", async ({ step, subscriber }) => {
  const res = await step.email("mail", () => ({ subject: "Hi" }));
  await step.run("seen", () => ({ timezone: subscriber?.timezone ?? "", heldUntil: res.heldUntil ?? null }));
});

const fxControls = workflow("fx_controls", async ({ step, locale }) => {
  await step.email("welcome", ({ controls }) => ({ subject: controls.subject, body: `${controls.greeting} (${locale})` }));
}, {
  controls: {
    welcome: {
      type: "object",
      properties: { subject: { type: "string", default: "Welcome" }, greeting: { type: "string", default: "Hello" } },
    },
  },
});

// fx_preview's step bodies fail: a preview runs none of them.
const fxPreview = workflow("fx_preview", async ({ step }) => {
  const user = await step.run("load", (): { name: string } => {
    throw new Error("the body of load ran");
  }, { preview: { name: "Sample" } });
  await step.delay("pause", "30s");
  await step.email("welcome", ({ controls }) => ({ subject: `${controls.subject} ${user.name}`, html: "<p>Hi</p>", layout: "brand" }));
  await step.run("audit", (): number => {
    throw new Error("the body of audit ran");
  });
  await step.sms("sms", () => ({ body: "Hi " + user.name }));
}, {
  controls: { welcome: { type: "object", properties: { subject: { type: "string", default: "Welcome" } } } },
});

const fxDup = workflow("fx_dup", async ({ step }) => {
  await step.run("a", () => 1);
  await step.run("a", () => 2);
});

const fxThrows = workflow("fx_throws", async ({ step, subscriber }) => {
  if (!subscriber) throw new Error("fx_throws needs a subscriber");
  await step.run("ok", () => null);
  await step.run("explode", () => {
    throw new Error("boom");
  });
});

const fxInvalid = workflow("fx_invalid", async ({ step }) => {
  await step.waitForEvent("wait", { event: "" });
});

// fx_untouched fails in every step body: a check, which runs none, goes through it.
const fxUntouched = workflow("fx_untouched", async ({ step }) => {
  await step.run("body", () => {
    throw new Error("the body ran");
  });
  await step.email("mail", () => {
    throw new Error("the content ran");
  });
});

export const fixtureWorkflows: Record<string, Workflow<any>> = Object.fromEntries(
  [fxSteps, fxSchedule, fxKinds, fxTime, fxThrottle, fxArgs, fxNamed, fxZone, fxDup, fxThrows, fxInvalid, fxUntouched, fxControls, fxPreview].map((w) => [w.id, w]),
);
