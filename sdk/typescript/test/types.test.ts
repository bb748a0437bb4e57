// Compile-time checks: tsc fails the build when a line marked with an
// expect-error directive compiles, so these prove the compiler refuses them.
import { test } from "node:test";
import { workflow, type SendResult, type ThrottleResult, type DigestResult } from "@heraldhq/bridge";

export const typed = workflow<{ orderId: string; total: number }>("typed", async ({ step, payload }) => {
  const id: string = payload.orderId;
  // @ts-expect-error the payload has no such field
  payload.customer;
  // @ts-expect-error an email needs a subject
  await step.email("e1", () => ({ body: "no subject" }));
  // @ts-expect-error an sms body is a string
  await step.sms("s1", () => ({ body: 42 }));
  // @ts-expect-error a push needs a title
  await step.push("p1", () => ({ body: "b" }));
  // @ts-expect-error push data values are strings
  await step.push("p2", () => ({ title: "t", body: "b", data: { n: 1 } }));
  // @ts-expect-error the content of send follows its kind
  await step.send("x1", "sms", () => ({ subject: "s" }));
  // @ts-expect-error an unknown channel kind
  await step.send("x2", "fax", () => ({ body: "b" }));
  // @ts-expect-error a webhook needs data
  await step.webhook("w1", () => ({}));
  // @ts-expect-error an in-app action needs a url
  await step.inApp("i1", () => ({ body: "b", primaryAction: { label: "Open" } }));
  // @ts-expect-error a throttle needs a limit
  await step.throttle("t1", { window: "1h" });
  // @ts-expect-error a digest needs a window or a cron
  await step.digest("d1", { key: "k" });
  // @ts-expect-error a delay is a span, an instant or a local time
  await step.delay("d2", { at: "09:00" });
  const sent: SendResult = await step.email("e2", async () => ({ subject: "s", html: "<p>h</p>", text: "t", replyTo: "a@b.c" }), { to: id });
  const t: ThrottleResult = await step.throttle("t2", { limit: 3, window: 3600 });
  const d: DigestResult<{ n: number }> = await step.digest<{ n: number }>("d3", { cron: "0 9 * * 1-5", key: null });
  const n: number = d.events[0]!.payload.n + t.count;
  const v: { a: number } = await step.run("r", async () => ({ a: n }));
  const e: { approved: boolean } | null = await step.waitForEvent<{ approved: boolean }>("w", { event: "ok", timeout: null });
  void [sent, v, e];
}, { channels: { email: true }, payloadSchema: { type: "object" } });

// @ts-expect-error an unknown channel kind in the defaults
workflow("bad_defaults", () => {}, { channels: { fax: true } });

workflow("named", () => {}, { name: "Weekly digest", description: "Every Monday at 9." });
// Not called: a name that is not text also throws when defined.
export const badName = () =>
  // @ts-expect-error a name is text
  workflow("bad_name", () => {}, { name: 7 });

test("the type checks above compiled", () => {});
