#!/usr/bin/env bash
# Packs the package as npm would publish it, installs the tarball into an
# empty project, and there type-checks (tsc --noEmit) and imports a small
# consumer: what a user gets from `npm install @heraldhq/bridge` works.
set -euo pipefail
sdk="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$sdk"
[ -f dist/index.js ] || npm run build --silent
tgz="$(npm pack --silent --ignore-scripts --pack-destination "$tmp" | tail -n 1)"
if tar -tzf "$tmp/$tgz" | grep -q -E '^package/(src|test|build)/'; then
  echo "pack-check: the tarball carries sources or tests:"; tar -tzf "$tmp/$tgz"; exit 1
fi
if node -e 'process.exit(Object.keys(require(process.argv[1]).dependencies ?? {}).length ? 1 : 0)' "$sdk/package.json"; then :; else
  echo "pack-check: the package has runtime dependencies"; exit 1
fi
mkdir "$tmp/consumer"
cd "$tmp/consumer"
printf '{"name":"consumer","private":true,"type":"module"}\n' > package.json
npm install --silent --no-audit --no-fund --offline "$tmp/$tgz"
cat > tsconfig.json <<JSON
{
  "compilerOptions": {
    "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
    "strict": true, "noEmit": true, "skipLibCheck": false,
    "typeRoots": ["$sdk/node_modules/@types"], "types": ["node"]
  },
  "files": ["consumer.ts", "example.ts"]
}
JSON
cat > consumer.ts <<'TS'
import { workflow, serve, createHandler, replay, NondeterminismError, type SendResult } from "@heraldhq/bridge";

const welcome = workflow<{ plan: string }>("welcome", async ({ step, payload, subscriber }) => {
  const user = await step.run("load", async () => ({ name: subscriber?.subscriberId ?? "there" }));
  await step.delay("pause", "30s");
  const ok = await step.waitForEvent<{ by: string }>("confirm", { event: "confirmed", timeout: "1h" });
  const res: SendResult = await step.email("mail", () => ({ subject: `Hi ${user.name}`, body: `${payload.plan} ${ok?.by}` }));
  await step.digest("batch", { window: "10m", key: res.status });
  await step.throttle("cap", { limit: 3, window: "1h", key: null });
  // @ts-expect-error an sms has no subject
  await step.sms("text", () => ({ subject: "x" }));
}, { critical: false, channels: { email: true }, schedule: null, payloadSchema: { type: "object" } });

const handle: (r: Request) => Promise<Response> = createHandler({ workflows: [welcome], signingSecret: "s" });
void handle;
void serve;
replay(welcome, { steps: [] }).catch((e) => e instanceof NondeterminismError);
TS
# The example Bridge (examples/typescript) compiles against the package too.
cp "$sdk/../../examples/typescript/src/main.ts" example.ts
"$sdk/node_modules/.bin/tsc" -p .
node --input-type=module -e '
import { workflow, createHandler } from "@heraldhq/bridge";
const h = createHandler({ workflows: [workflow("w", () => {})], signingSecret: "s" });
const r = await h(new Request("http://x/", { method: "POST", body: "{}" }));
if (r.status !== 401) { console.error("pack-check: unsigned request answered", r.status); process.exit(1); }
'
echo "pack-check: $tgz installs into an empty project and its types, a consumer and the example Bridge compile there"
