// A Bridge process for the end-to-end test (e2e_test.go): a real herald
// drives it. HERALD_SIGNING_SECRET is the secret PUT /v1/bridge returned,
// PORT where it listens; VARIANT=changed serves a journey whose first step
// was renamed, as a deploy that breaks runs in flight would.
import { serve, workflow } from "@heraldhq/bridge";

const changed = process.env.VARIANT === "changed";

const journey = workflow("journey", async ({ step, subscriber }) => {
  const profile = await step.run(changed ? "load-v2" : "load", async () => ({
    name: String(subscriber?.attributes?.firstName ?? "there"),
  }));
  await step.delay("pause", 1);
  const ok = await step.waitForEvent<{ by: string }>("confirm", { event: "confirmed", timeout: "1h" });
  await step.email("mail", () => ({
    subject: `Hi ${profile.name}, confirmed by ${ok?.by ?? "nobody"}`,
    text: "Your journey is complete.\n",
  }));
});

const batched = workflow<{ n: number }>("batched", async ({ step }) => {
  const batch = await step.digest<{ n: number }>("batch", { window: "6s" });
  await step.email("summary", () => ({
    subject: `${batch.count} updates: ${batch.events.map((e) => e.payload.n).join(",")}`,
    body: "Here is what happened.",
  }));
});

const server = serve({
  workflows: [journey, batched],
  signingSecret: process.env.HERALD_SIGNING_SECRET ?? "",
  port: Number(process.env.PORT ?? 0),
  host: "127.0.0.1",
});
server.on("listening", () => {
  const addr = server.address();
  console.log(`listening on ${typeof addr === "object" && addr ? addr.port : addr}`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
