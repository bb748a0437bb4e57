// Subscribers: the list, and a subscriber's page with its contacts,
// preferences, subscriptions, runs, inbox, suppressions, and whether a
// send to it would go out now.

import { api } from "../api.js";
import { go } from "../route.js";
import { enc, facts, failure, h, json, link, notFound, paged, shortId, show, status, table, when } from "../dom.js";

export async function subscribersPage() {
  const input = h("input", { name: "subscriberId", id: "findSubscriber" });
  const form = h("form", { class: "filters", role: "search" }, h("label", { for: "findSubscriber" }, "Subscriber id", input),
    h("button", { type: "submit" }, "Open"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); if (input.value) go("/subscribers/" + enc(input.value)); });
  const list = paged("/v1/subscribers", ["Subscriber", "Contacts", "Locale", "Updated"],
    (s) => [link("/subscribers/" + enc(s.subscriberId), s.subscriberId), Object.entries(s.contacts).map(([k, v]) => k + ": " + v.join(", ")).join("; "),
      s.locale || "", when(s.updatedAt)]);
  show("Subscribers", form, list);
  await list.reload();
}

export async function subscriberPage(id) {
  let sub;
  try {
    sub = await api("/v1/subscribers/" + enc(id));
  } catch (e) {
    if (e.status === 404) return notFound("Subscriber " + id);
    return show("Subscriber " + id, failure(e));
  }
  const safe = async (p) => { try { return await p; } catch (e) { return { failed: e }; } };
  const [prefs, subs, inbox, supp] = await Promise.all([safe(api("/v1/subscribers/" + enc(id) + "/preferences")),
    safe(api("/v1/subscribers/" + enc(id) + "/subscriptions")), safe(api("/v1/subscribers/" + enc(id) + "/inbox")),
    safe(api("/v1/suppressions?limit=200"))]);
  const addresses = new Set(Object.values(sub.contacts).flat());
  const runs = paged("/v1/runs?subscriberId=" + enc(id), ["Run", "Workflow", "Status", "Updated"],
    (r) => [shortId(r.runId, "/runs/" + enc(r.runId)), r.workflowId, status(r.status), when(r.updatedAt)]);
  const or = (v, f) => (v.failed ? failure(v.failed) : f(v));
  show("Subscriber " + sub.subscriberId,
    facts([["Locale", sub.locale], ["Time zone", sub.timezone], ["Created", when(sub.createdAt)], ["Updated", when(sub.updatedAt)]]),
    h("h2", {}, "Contacts"), table(["Kind", "Addresses"], Object.entries(sub.contacts).map(([k, v]) => [k, v.join(", ")])),
    sub.attributes ? [h("h2", {}, "Attributes"), json(sub.attributes)] : null,
    h("h2", {}, "Would a send go out now?"), whyBox(id),
    h("h2", {}, "Preferences"), or(prefs, (p) => json(p)),
    h("h2", {}, "Subscriptions"), or(subs, (s) => table(["Topic"], (s.data || []).map((t) => [t.topicKey || t.key || JSON.stringify(t)]))),
    h("h2", {}, "Runs"), runs,
    h("h2", {}, "Inbox"), or(inbox, (m) => table(["Message", "Subject", "Body", "Read"], (m.data || []).map((x) => [shortId(x.messageId), x.subject || "", x.body, x.readAt ? when(x.readAt) : "unread"]))),
    h("h2", {}, "Suppressions of its addresses"), or(supp, (s) => table(["Kind", "Address", "Reason"],
      (s.data || []).filter((x) => addresses.has(x.address)).map((x) => [x.kind, x.address, x.reason || ""]))));
  await runs.reload();
}

// whyBox answers, for a workflow picked from the tenant's, whether a send
// of each kind to the subscriber would go out now, and why not: the
// server decides, with the send path's own code.
function whyBox(id) {
  const select = h("select", { name: "workflowId", id: "whyWorkflow" }, h("option", { value: "" }, "any workflow"));
  const out = h("div", { "aria-live": "polite" });
  const load = async () => {
    try {
      const e = await api("/v1/subscribers/" + enc(id) + "/explain" + (select.value ? "?workflowId=" + enc(select.value) : ""));
      out.replaceChildren(table(["Kind", "Goes out", "Why not", "Channels tried"], e.kinds.map((k) => [k.kind,
        k.sends ? (k.heldUntil ? ["held for quiet hours until ", when(k.heldUntil)] : "yes") : "no",
        k.reason ? h("code", {}, k.reason) : "", k.channels.join(", ")])));
    } catch (err) {
      out.replaceChildren(failure(err));
    }
  };
  select.addEventListener("change", load);
  api("/v1/workflows").then((wf) => {
    for (const w of wf.workflows) select.append(h("option", { value: w.workflowId }, w.workflowId));
  }).catch(() => {});
  load();
  return h("div", {}, h("label", { for: "whyWorkflow" }, "Workflow", select), out);
}
