// A small tenant Bridge in TypeScript: the HTTP endpoint Herald calls to run
// the tenant's workflows. It serves welcome, the workflow of the Go example
// (examples/bridge): look the subscriber up in a (stand-in) CRM, e-mail
// them, and text them instead when they have no e-mail address.
//
// Run it with the signing secret that PUT /v1/bridge returned:
//
//	HERALD_SIGNING_SECRET=… make bridge-ts
//
// and register http://127.0.0.1:4000/ as the webhookUrl (every path is
// served). BRIDGE_PORT changes the port.
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
  const p = await step.run("fetch-profile", () => lookupProfile(subscriber));
  // step.email's content is an email's: a subject, html and text, a reply-to.
  const mail = await step.email("welcome-email", () => ({
    subject: `Welcome to Acme, ${p.firstName}!`,
    html: `<p>Hi ${p.firstName},</p><p>Your <b>${p.plan}</b> plan is ready. Reply to this e-mail if you need a hand.</p>`,
    text: `Hi ${p.firstName},\n\nYour ${p.plan} plan is ready. Reply to this e-mail if you need a hand.\n`,
  }));
  if (mail.status !== "skipped" || mail.reason !== "no_address") return; // sent, or they opted out
  // No e-mail address: a text instead (the tenant needs an sms channel).
  await step.sms("welcome-sms", () => ({ body: `Welcome to Acme, ${p.firstName}! Your ${p.plan} plan is ready.` }));
});

const secret = process.env.HERALD_SIGNING_SECRET;
if (!secret) {
  console.error("HERALD_SIGNING_SECRET is required: the signingSecret that PUT /v1/bridge returned");
  process.exit(1);
}
const port = Number(process.env.BRIDGE_PORT ?? 4000);
const server = serve({ workflows: [welcome], signingSecret: secret, port, host: "127.0.0.1" });
server.on("listening", () => console.log(`bridge: serving welcome on http://127.0.0.1:${port}/`));
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
