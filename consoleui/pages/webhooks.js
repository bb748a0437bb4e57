// Webhooks: each endpoint and its messages' attempts, newest first, each
// message with a button that sends it again; the attempts update live.

import { api, tail } from "../api.js";
import { onLeave } from "../route.js";
import { confirmed, enc, facts, failure, h, shortId, show, status, table, when } from "../dom.js";

export async function webhooksPage(_q, again) {
  let hooks;
  try {
    hooks = await api("/v1/webhooks");
  } catch (e) {
    return show("Webhooks", failure(e));
  }
  const msg = h("div", { "aria-live": "polite" });
  const sections = await Promise.all(hooks.data.map(async (w) => {
    let attempts;
    try {
      const rows = (await api("/v1/webhooks/" + enc(w.webhookId) + "/attempts?order=desc&limit=500")).data;
      // The last attempt of each message (its first row) offers to send it again.
      const last = new Map();
      rows.forEach((a, i) => last.has(a.eventId) || last.set(a.eventId, i));
      attempts = table(["Message", "Type", "Status", "Answer", "Attempt", "At", ""], rows.map((a, i) => [shortId(a.eventId), a.type,
        status(a.status), a.httpStatus || "", a.attempt, when(a.createdAt),
        last.get(a.eventId) === i ? confirmed("Resend", "Send this message again?", "Yes, resend", async () => {
          try {
            await api("/v1/webhooks/" + enc(w.webhookId) + "/messages/" + enc(a.eventId) + "/resend", { method: "POST", body: {} });
            msg.replaceChildren(h("p", { class: "note" }, "Queued: ", shortId(a.eventId), " will be sent again."));
          } catch (e) {
            msg.replaceChildren(failure(e));
          }
        }) : ""]));
    } catch (e) {
      attempts = failure(e);
    }
    return [h("h2", {}, w.url), facts([["Id", w.webhookId], ["Events", w.events.join(", ")], ["Enabled", w.enabled ? "yes" : "no"]]), attempts];
  }));
  show("Webhooks", msg, hooks.data.length ? sections : h("p", { class: "muted" }, "No endpoints."));
  let timer = null;
  tail((ev) => {
    if (ev.aggregate !== "whattempt" || ev.type !== "WebhookAttempted") return;
    clearTimeout(timer);
    timer = setTimeout(again, 300);
  });
  onLeave(() => clearTimeout(timer));
}
