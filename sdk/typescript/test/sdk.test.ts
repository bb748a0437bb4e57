import { test } from "node:test";
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import {
  createHandler, DuplicateStepIdError, NondeterminismError, parseDuration, replay, serve, sign, StepError, workflow,
  type ExecuteRequest,
} from "@heraldhq/bridge";

const SECRET = "whsec_test";

async function call(handle: (r: Request) => Promise<Response>, body: unknown, secret = SECRET) {
  const raw = JSON.stringify(body);
  const ts = Math.floor(Date.now() / 1000);
  const res = await handle(new Request("http://b.test/", {
    method: "POST", body: raw, headers: { "x-svc-timestamp": String(ts), "x-svc-signature": sign(secret, ts, raw) },
  }));
  return { status: res.status, body: await res.json() as any };
}

const welcome = workflow<{ plan: string }>("welcome", async ({ step, payload }) => {
  const user = await step.run("load", async () => ({ name: "Ada" }));
  await step.email("mail", () => ({ subject: `Hi ${user.name}`, body: `Your ${payload.plan} plan` }));
});

test("a run callback runs once, its recorded output is replayed", async () => {
  let calls = 0;
  const w = workflow("w", async ({ step }) => {
    const v = await step.run("a", () => ++calls);
    await step.run("b", () => v * 10);
  });
  const handle = createHandler({ workflows: [w], signingSecret: SECRET });
  const first = await call(handle, { action: "execute", workflowId: "w", steps: [] });
  assert.deepEqual(first.body, { status: "step", step: { stepId: "a", type: "run", output: 1 } });
  const second = await call(handle, { action: "execute", workflowId: "w", steps: [{ stepId: "a", type: "run", output: 7 }] });
  assert.deepEqual(second.body, { status: "step", step: { stepId: "b", type: "run", output: 70 } });
  assert.equal(calls, 1);
});

test("the payload is typed and passed; rotation accepts the previous secret", async () => {
  const handle = createHandler({ workflows: [welcome], signingSecret: "new", signingSecrets: [SECRET] });
  const r = await call(handle, { action: "execute", workflowId: "welcome", payload: { plan: "pro" },
    steps: [{ stepId: "load", type: "run", output: { name: "Bo" } }] });
  assert.deepEqual(r.body.step.content, { subject: "Hi Bo", body: "Your pro plan" });
});

test("a step called inside another step's callback is refused", async () => {
  const w = workflow("nested", async ({ step }) => {
    await step.run("outer", async () => step.run("inner", () => 1));
  });
  const r = await call(createHandler({ workflows: [w], signingSecret: SECRET }), { action: "execute", workflowId: "nested" });
  assert.equal(r.status, 500);
  assert.deepEqual(r.body.error, { code: "invalid_step", stepId: "inner", message: "bridge: invalid step: called inside another step's callback" });
});

test("steps run concurrently are refused, a swallowed suspension changes nothing", async () => {
  const parallel = workflow("parallel", async ({ step }) => {
    await Promise.all([step.run("a", () => 1), step.run("b", () => 2)]);
  });
  const r = await call(createHandler({ workflows: [parallel], signingSecret: SECRET }), { action: "execute", workflowId: "parallel" });
  assert.equal(r.status, 500);
  assert.equal(r.body.error.stepId, "b");

  let after = 0;
  const swallow = workflow("swallow", async ({ step }) => {
    try {
      await step.run("a", () => 1);
    } catch {
      // a workflow that swallows the suspension: later steps still end the execution
    }
    await step.run("b", () => ++after).catch(() => {});
  });
  const s = await call(createHandler({ workflows: [swallow], signingSecret: SECRET }), { action: "execute", workflowId: "swallow" });
  assert.deepEqual(s.body, { status: "step", step: { stepId: "a", type: "run", output: 1 } });
  assert.equal(after, 0);
});

test("a step not awaited is still the answer", async () => {
  const w = workflow("forgot", async ({ step }) => {
    void step.run("slow", () => new Promise((r) => setTimeout(() => r("done"), 20)));
  });
  const r = await call(createHandler({ workflows: [w], signingSecret: SECRET }), { action: "execute", workflowId: "forgot" });
  assert.deepEqual(r.body, { status: "step", step: { stepId: "slow", type: "run", output: "done" } });
});

test("an output that does not encode as JSON fails the step", async () => {
  const w = workflow("big", async ({ step }) => {
    await step.run("n", () => 10n);
  });
  const r = await call(createHandler({ workflows: [w], signingSecret: SECRET }), { action: "execute", workflowId: "big" });
  assert.equal(r.status, 500);
  assert.equal(r.body.error.stepId, "n");
  assert.match(r.body.error.message, /^output does not encode as JSON: /);
});

test("step arguments are checked", async () => {
  const cases: [string, (s: any) => Promise<unknown>, string][] = [
    ["negative delay", (s) => s.delay("d", -1), "negative delay"],
    ["bad duration", (s) => s.delay("d", "soon"), 'invalid duration "soon"'],
    ["local time not a string", (s) => s.delay("d", { localTime: 9 }), 'local time "9" is not HH:MM, 00:00 to 23:59'],
    ["local time 24:00", (s) => s.delay("d", { localTime: "24:00" }), 'local time "24:00" is not HH:MM, 00:00 to 23:59'],
    ["bad until", (s) => s.delay("d", { until: "never" }), "zero time, or a time outside the years 1 to 9999"],
    ["zero window", (s) => s.digest("d", { window: 0 }), "window must be positive"],
    ["cron not a string", (s) => s.digest("d", { cron: 5 }), "empty cron"],
    // The cases both SDKs can express are shared wire fixtures (invalid-*.json); these are JavaScript's own.
    ["fractional limit", (s) => s.throttle("d", { limit: 2.5, window: "1h" }), "limit must be an integer"],
    ["no limit", (s) => s.throttle("d", { window: "1h" }), "limit must be an integer"],
    ["negative limit", (s) => s.throttle("d", { limit: -1, window: "1h" }), "limit must be at least 1"],
    ["no throttle window", (s) => s.throttle("d", { limit: 3 }), "window must be positive and at most 31 days"],
    ["throttle window of 31 days and a second", (s) => s.throttle("d", { limit: 3, window: 31 * 86400 + 1 }), "window must be positive and at most 31 days"],
    ["bad throttle window", (s) => s.throttle("d", { limit: 3, window: "an hour" }), 'invalid duration "an hour"'],
    ["negative timeout", (s) => s.waitForEvent("d", { event: "e", timeout: -5 }), "negative timeout"],
    ["empty recipient", (s) => s.email("d", () => ({ subject: "x" }), { to: "" }), "empty recipient in To"],
  ];
  for (const [name, f, problem] of cases) {
    const w = workflow("args", async ({ step }) => {
      await f(step);
    });
    const r = await call(createHandler({ workflows: [w], signingSecret: SECRET }), { action: "execute", workflowId: "args" });
    assert.equal(r.status, 500, name);
    assert.deepEqual(r.body.error, { code: "invalid_step", stepId: "d", message: "bridge: invalid step: " + problem }, name);
  }
});

test("durations are read as Go reads them", () => {
  assert.equal(parseDuration("1h30m"), 5400);
  assert.equal(parseDuration("1.5d"), 129600);
  assert.equal(parseDuration("2d12h"), 216000);
  assert.equal(parseDuration("300ms"), 0.3);
  for (const bad of ["", "10", "-1s", "+1s", "1x", "d", "1.d"]) assert.equal(parseDuration(bad), undefined, bad);
});

test("replay reports nondeterminism naming the position and both sides", async () => {
  const history: ExecuteRequest = {
    action: "execute", workflowId: "welcome", payload: { plan: "pro" },
    steps: [{ stepId: "fetch", type: "run", output: {} }],
  };
  await assert.rejects(replay(welcome, history), (e: unknown) => {
    assert.ok(e instanceof NondeterminismError);
    assert.equal(e.message, 'nondeterministic workflow: step 1 was "fetch" (run) in the history, the code asked for "load" (run)');
    assert.equal(e.position, 1);
    assert.deepEqual(e.history, { stepId: "fetch", type: "run" });
    assert.deepEqual(e.asked, { stepId: "load", type: "run" });
    return true;
  });
  // A history the code follows: the next step is named, not run.
  let ran = false;
  const w = workflow("welcome", async ({ step }) => {
    await step.run("load", () => ({ name: "Ada" }));
    await step.email("mail", () => {
      ran = true;
      return { subject: "x" };
    });
  });
  assert.deepEqual(await replay(w, JSON.stringify({ ...history, steps: [{ stepId: "load", type: "run", output: {} }] })),
    { status: "step", step: { stepId: "mail", type: "send" } });
  assert.equal(ran, false);
  const done = { ...history, steps: [{ stepId: "load", type: "run", output: {} }, { stepId: "mail", type: "send", output: {} }] };
  assert.deepEqual(await replay(w, done), { status: "completed" });
  const dup = workflow("welcome", async ({ step }) => {
    await step.run("load", () => 1);
    await step.run("load", () => 1);
  });
  await assert.rejects(replay(dup, { steps: [{ stepId: "load", type: "run", output: 1 }] }), DuplicateStepIdError);
  const throws = workflow("welcome", async ({ step }) => {
    await step.run("load", () => 1);
    throw new Error("no");
  });
  await assert.rejects(replay(throws, { steps: [{ stepId: "load", type: "run", output: 1 }] }), /no/);
  await assert.rejects(replay(w, { workflowId: "other" }), /a history of workflow "other" replayed with workflow "welcome"/);
  assert.ok(new StepError("a", "b") instanceof Error);
});

test("definitions are checked", () => {
  assert.throws(() => workflow("1bad", () => {}), /bridge: invalid workflow id: "1bad"/);
  assert.throws(() => workflow("_", () => {}), /invalid workflow id/);
  assert.throws(() => workflow("ok", () => {}, { payloadSchema: [] as any }), /payload schema of "ok" is not a JSON object/);
  assert.throws(() => createHandler({ workflows: [welcome, welcome], signingSecret: SECRET }), /duplicate workflow id: "welcome"/);
});

test("display text is Unicode text, counted in code points", () => {
  // JavaScript's own cases; the ones Go shares are in bridge/testdata/workflow-text.json.
  const refused = 'bridge: invalid workflow: the name of "t" is not text of at most 100 characters without control characters';
  assert.throws(() => workflow("t", () => {}, { name: "lone \ud800 surrogate" }), { message: refused });
  assert.throws(() => workflow("t", () => {}, { name: 42 as any }), { message: refused });
  assert.doesNotThrow(() => workflow("t", () => {}, { name: "" }));
  assert.doesNotThrow(() => workflow("t", () => {}, { name: "a\u{1F4EC}".repeat(50) }));
});

test("a throttle window of 31 days is the longest", async () => {
  const w = workflow("month", async ({ step }) => {
    await step.throttle("t", { limit: 1, window: "31d", key: "" });
  });
  const r = await call(createHandler({ workflows: [w], signingSecret: SECRET }), { action: "execute", workflowId: "month" });
  assert.deepEqual(r.body, { status: "step", step: { stepId: "t", type: "throttle", limit: 1, window: 31 * 86400, key: null } });
});

test("serve answers over HTTP on its path only, and refuses a body too large", async () => {
  const server = serve({ workflows: [welcome], signingSecret: SECRET, port: 0, host: "127.0.0.1", path: "/api/herald", maxBodyBytes: 1000 });
  await new Promise((r) => server.once("listening", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const raw = JSON.stringify({ action: "health" });
    const ts = Math.floor(Date.now() / 1000);
    const headers = { "x-svc-timestamp": String(ts), "x-svc-signature": sign(SECRET, ts, raw) };
    const ok = await fetch(base + "/api/herald", { method: "POST", headers, body: raw });
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { status: "ok", workflows: 1 });
    const replayed = await fetch(base + "/api/herald", { method: "POST", headers, body: raw });
    assert.equal(replayed.status, 409);
    const elsewhere = await fetch(base + "/other", { method: "POST", headers, body: raw });
    assert.equal(elsewhere.status, 404);
    const big = await fetch(base + "/api/herald", { method: "POST", headers, body: "x".repeat(5000) });
    assert.equal(big.status, 413);
    assert.equal((await big.json() as any).error.code, "body_too_large");
    const unsigned = await fetch(base + "/api/herald", { method: "POST", body: raw });
    assert.equal(unsigned.status, 401);
  } finally {
    server.close();
  }
});
