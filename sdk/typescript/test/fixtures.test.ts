// Runs the shared wire fixtures of bridge/testdata/wire (see its README.md)
// against createHandler, as bridge/wirefixtures_test.go runs them against
// the Go SDK.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { createHandler, sign, workflow } from "@heraldhq/bridge";
import { fixtureWorkflows } from "./fixture-workflows.js";

// build/ → the repository root.
const dir = fileURLToPath(new URL("../../../bridge/testdata/wire/", import.meta.url));
const SECRET = "whsec_fixture";

interface Fixture {
  description: string;
  now: number;
  workflows: string[];
  request: { headers: Record<string, string>; body?: unknown; rawBody?: string };
  repeat?: number;
  status: number;
  body: any;
}

const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();

test("the fixtures are there", () => {
  assert.ok(files.length >= 30, `${files.length} fixtures in ${dir}`);
});

for (const file of files) {
  const fx: Fixture = JSON.parse(readFileSync(join(dir, file), "utf8"));
  test(`fixture ${file}: ${fx.description}`, async () => {
    const known = new Set(["description", "now", "workflows", "request", "repeat", "status", "body"]);
    for (const k of Object.keys(fx)) assert.ok(known.has(k), `unknown field ${k}`);
    const workflows = fx.workflows.map((id) => {
      const w = fixtureWorkflows[id];
      assert.ok(w, `no fixture workflow ${id}`);
      return w;
    });
    const handle = createHandler({ workflows, signingSecret: SECRET, now: () => fx.now * 1000 });
    const body = fx.request.rawBody ?? JSON.stringify(fx.request.body);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(fx.request.headers)) {
      const m = /^\{\{sign(?::(.*))?\}\}$/.exec(v);
      headers[k] = m ? sign(m[1] || SECRET, fx.request.headers["x-svc-timestamp"] ?? "", body) : v;
    }
    let res: Response | undefined;
    for (let i = 0; i <= (fx.repeat ?? 0); i++) {
      res = await handle(new Request("http://bridge.test/", { method: "POST", headers, body }));
    }
    const text = await res!.text();
    assert.equal(res!.status, fx.status, `${fx.description}: ${text}`);
    assert.equal(res!.headers.get("content-type"), "application/json");
    const got = JSON.parse(text);
    if (fx.body?.error && !("message" in fx.body.error)) delete got.error?.message;
    assert.deepEqual(got, fx.body, fx.description);
  });
}

// bridge/testdata/workflow-text.json: the bounds of a workflow's display
// text, which the Go SDK's TestWorkflowTextFixture runs too.
test("workflow-text.json: the display text both SDKs refuse, with the same error", () => {
  const fx: { cases: { case: string; field: "name" | "description"; text: string; times: number; error: string | null }[] } =
    JSON.parse(readFileSync(join(dir, "..", "workflow-text.json"), "utf8"));
  assert.ok(fx.cases.length > 0);
  for (const c of fx.cases) {
    const define = () => workflow("fx_text", () => {}, { [c.field]: c.text.repeat(c.times) });
    if (c.error === null) assert.doesNotThrow(define, c.case);
    else assert.throws(define, { message: c.error }, c.case);
  }
});

// bridge/testdata/control-schemas.json: the control schemas a workflow may
// declare, which the Go SDK's TestControlSchemasFixture runs too.
test("control-schemas.json: the control schemas both SDKs refuse, with the same error", () => {
  const fx: { cases: { case: string; stepId: string; schema: any; error: string | null }[] } =
    JSON.parse(readFileSync(join(dir, "..", "control-schemas.json"), "utf8"));
  assert.ok(fx.cases.length > 0);
  for (const c of fx.cases) {
    const define = () => workflow("fx_ctl", () => {}, { controls: { [c.stepId]: c.schema } });
    if (c.error === null) assert.doesNotThrow(define, c.case);
    else assert.throws(define, { message: c.error }, c.case);
  }
});
