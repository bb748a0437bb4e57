// Deliveries: every send's attempts, newest first, with who, what, where
// and how it went, filtered by status, kind, channel, subscriber,
// workflow and time.

import { go } from "../route.js";
import { enc, h, kind, link, paged, shortId, show, status, when, wordy } from "../dom.js";

const statuses = ["", "pending", "sent", "delivered", "failed", "bounced", "complained", "skipped"];
const kinds = ["", "email", "sms", "chat", "push", "in_app", "webhook"];
const filters = ["status", "kind", "channelKey", "subscriberId", "workflowId", "runId", "since", "until"];

// localInput is an instant as a datetime-local input's value, in the
// browser's zone; isoOf is the way back.
const localInput = (t) => {
  if (!t) return "";
  const d = new Date(t);
  if (isNaN(d)) return "";
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
};
const isoOf = (v) => (v ? new Date(v).toISOString() : "");

export async function deliveriesPage(q) {
  const pick = (name, label, options) => h("label", {}, label, h("select", { name },
    options.map((s) => h("option", { value: s, selected: (q.get(name) || "") === s }, s || "any"))));
  const field = (name, label, attrs = {}) => h("label", {}, label, h("input", { name, value: q.get(name) || "", ...attrs }));
  const form = h("form", { class: "filters", role: "search" },
    pick("status", "Status", statuses), pick("kind", "Kind", kinds), field("channelKey", "Channel"),
    field("subscriberId", "Subscriber"), field("workflowId", "Workflow"),
    field("since", "From", { type: "datetime-local", value: localInput(q.get("since")) }),
    field("until", "Before", { type: "datetime-local", value: localInput(q.get("until")) }),
    q.get("runId") ? h("input", { type: "hidden", name: "runId", value: q.get("runId") }) : null,
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) p.set(k, k === "since" || k === "until" ? isoOf(v) : v);
    go("/deliveries" + (p.toString() ? "?" + p : ""));
  });
  const p = new URLSearchParams({ order: "desc" });
  for (const k of filters) if (q.get(k)) p.set(k, q.get(k));
  const list = paged("/v1/deliveries?" + p, ["Time", "Subscriber", "Workflow", "Step", "Channel", "Address", "Status", "Run"],
    (d) => {
      const heard = (d.events || []).at(-1);
      return [when(d.createdAt), d.subscriberId ? link("/subscribers/" + enc(d.subscriberId), d.subscriberId) : "",
        wordy(d.workflowId), h("code", {}, d.stepId), [kind(d.kind), " ", h("span", { class: "muted channel-key" }, d.channelKey)], wordy(d.address),
        [status(d.status), d.reason ? h("div", { class: "reason" }, d.reason) : null,
          d.error ? h("div", { class: "error" }, d.error.code) : null,
          heard && heard.type !== d.status ? h("div", { class: "muted" }, "last heard: " + heard.type) : null],
        shortId(d.runId, "/runs/" + enc(d.runId))];
    });
  show("Deliveries", form, h("p", { class: "muted" }, "Newest first."), list);
  await list.reload();
}
