// Webhooks: each endpoint and its messages' attempts.

import { api } from "../api.js";
import { enc, facts, failure, h, shortId, show, status, table, when } from "../dom.js";

export async function webhooksPage() {
  let hooks;
  try {
    hooks = await api("/v1/webhooks");
  } catch (e) {
    return show("Webhooks", failure(e));
  }
  const sections = await Promise.all(hooks.data.map(async (w) => {
    let attempts;
    try {
      attempts = table(["Event", "Type", "Status", "Answer", "Attempt", "At"], (await api("/v1/webhooks/" + enc(w.webhookId) + "/attempts")).data
        .map((a) => [shortId(a.eventId), a.type, status(a.status), a.httpStatus || "", a.attempt, when(a.createdAt)]));
    } catch (e) {
      attempts = failure(e);
    }
    return [h("h2", {}, w.url), facts([["Id", w.webhookId], ["Events", w.events.join(", ")], ["Enabled", w.enabled ? "yes" : "no"]]), attempts];
  }));
  show("Webhooks", hooks.data.length ? sections : h("p", { class: "muted" }, "No endpoints."));
}
