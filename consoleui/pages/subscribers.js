// Subscribers: the list, and a subscriber's page with its contacts,
// preferences, subscriptions, runs, inbox, suppressions, and whether a
// send to it would go out now.

import { api } from "../api.js";
import { go } from "../route.js";
import { confirmed, enc, facts, failure, h, json, kind, link, notFound, paged, shortId, show, status, table, when } from "../dom.js";

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
  const [prefs, subs, inbox, supp, wfs] = await Promise.all([safe(api("/v1/subscribers/" + enc(id) + "/preferences")),
    safe(api("/v1/subscribers/" + enc(id) + "/subscriptions")), safe(api("/v1/subscribers/" + enc(id) + "/inbox")),
    safe(api("/v1/suppressions?limit=200")), safe(api("/v1/workflows"))]);
  const addresses = new Set(Object.values(sub.contacts).flat());
  const runs = paged("/v1/runs?subscriberId=" + enc(id), ["Run", "Workflow", "Status", "Updated"],
    (r) => [shortId(r.runId, "/runs/" + enc(r.runId)), r.workflowId, status(r.status), when(r.updatedAt)]);
  const or = (v, f) => (v.failed ? failure(v.failed) : f(v));
  show("Subscriber " + sub.subscriberId,
    facts([["Locale", sub.locale], ["Time zone", sub.timezone], ["Created", when(sub.createdAt)], ["Updated", when(sub.updatedAt)]]),
    h("h2", {}, "Contacts"), table(["Kind", "Addresses"], Object.entries(sub.contacts).map(([k, v]) => [kind(k), v.join(", ")])),
    sub.attributes ? [h("h2", {}, "Attributes"), json(sub.attributes)] : null,
    h("h2", {}, "Would a send go out now?"), whyBox(id),
    h("h2", {}, "Preferences"), or(prefs, (p) => prefsGrid(sub, p, wfs.failed ? [] : wfs.workflows.map((w) => w.workflowId))),
    h("h2", {}, "Subscriptions"), or(subs, (s) => table(["Topic"], (s.data || []).map((t) => [t.topicKey || t.key || JSON.stringify(t)]))),
    h("h2", {}, "Runs"), runs,
    h("h2", {}, "Inbox"), or(inbox, (m) => table(["Message", "Subject", "Body", "Read"], (m.data || []).map((x) => [shortId(x.messageId), x.subject || "", x.body, x.readAt ? when(x.readAt) : "unread"]))),
    h("h2", {}, "Suppressions of its addresses"), or(supp, (s) => table(["Kind", "Address", "Reason"],
      (s.data || []).filter((x) => addresses.has(x.address)).map((x) => [kind(x.kind), x.address, x.reason || ""]))));
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
      out.replaceChildren(table(["Kind", "Goes out", "Why not", "Channels tried"], e.kinds.map((k) => [kind(k.kind),
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

const kinds = ["email", "sms", "chat", "push", "in_app"];

// prefsGrid edits the subscriber's preferences: a row for all workflows,
// then one a workflow, a toggle a channel kind (unset toggles show what
// they inherit), the time zone and quiet hours; saved at once, confirmed.
function prefsGrid(sub, prefs, workflows) {
  const id = sub.subscriberId;
  const all = prefs.channels || {};
  const per = prefs.workflows || {};
  const names = [...new Set([...workflows, ...Object.keys(per)])].sort();
  const boxes = [];
  const row = (label, wf) => {
    const own = wf ? ((per[wf] || {}).channels || {}) : all;
    return [wf ? h("code", {}, wf) : h("strong", {}, label), ...kinds.map((k) => {
      const set = own[k] !== undefined;
      const on = set ? own[k] : wf && all[k] !== undefined ? all[k] : true;
      const box = h("input", { type: "checkbox", checked: on, "aria-label": (wf || "all workflows") + ": " + k,
        "data-workflow": wf || "", "data-kind": k, title: set ? "set" : "inherited" });
      box.dataset.was = String(on);
      boxes.push(box);
      return h("span", { class: set ? "toggle set" : "toggle" }, box);
    })];
  };
  const tz = h("input", { id: "prefTimezone", name: "timezone", value: sub.timezone || "", placeholder: "Europe/Paris" });
  const qh = prefs.quietHours || {};
  const qStart = h("input", { id: "prefQuietStart", type: "time", value: qh.start || "" });
  const qEnd = h("input", { id: "prefQuietEnd", type: "time", value: qh.end || "" });
  const out = h("div", { "aria-live": "polite" });
  const save = confirmed("Save preferences", "Really save these preferences?", "Yes, save", async () => {
    const patch = {};
    for (const b of boxes) {
      if (String(b.checked) === b.dataset.was) continue;
      const wf = b.dataset.workflow;
      if (!wf) (patch.channels ||= {})[b.dataset.kind] = b.checked;
      else (((patch.workflows ||= {})[wf] ||= { channels: {} }).channels)[b.dataset.kind] = b.checked;
    }
    if ((qStart.value || "") !== (qh.start || "") || (qEnd.value || "") !== (qh.end || "")) {
      patch.quietHours = qStart.value && qEnd.value ? { start: qStart.value, end: qEnd.value } : null;
    }
    try {
      if (Object.keys(patch).length) await api("/v1/subscribers/" + enc(id) + "/preferences", { method: "PATCH", body: patch });
      if (tz.value.trim() !== (sub.timezone || "")) {
        await api("/v1/subscribers/" + enc(id), { method: "PUT", body: { contacts: sub.contacts, locale: sub.locale ?? null,
          attributes: sub.attributes ?? null, timezone: tz.value.trim() || null } });
      }
      window.dispatchEvent(new Event("herald:route"));
    } catch (e) {
      out.replaceChildren(failure(e));
    }
  });
  return h("div", { class: "prefs" },
    table(["Workflow", ...kinds.map((k) => kind(k))], [row("All workflows", ""), ...names.map((wf) => row(wf, wf))]),
    h("div", { class: "row" }, h("label", { for: "prefTimezone" }, "Time zone", tz),
      h("label", { for: "prefQuietStart" }, "Quiet from", qStart), h("label", { for: "prefQuietEnd" }, "until", qEnd)),
    h("p", { class: "muted" }, "A box left as it was keeps what it inherits (from all workflows, else on)."),
    h("div", { class: "actions" }, save), out);
}
