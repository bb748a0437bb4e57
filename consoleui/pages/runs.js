// Runs: newest first, filtered by status, workflow, subscriber and
// transaction, updating live; each with its workflow's name, subscriber,
// status, start and duration.

import { api, tail } from "../api.js";
import { go, onLeave } from "../route.js";
import { duration, enc, h, link, paged, shortId, show, status, when, wordy } from "../dom.js";

const finished = ["completed", "failed", "cancelled", "digested"];

// took is how long a run ran, or has run so far.
export function took(r) {
  const end = finished.includes(r.status) ? new Date(r.updatedAt) : Date.now();
  const ms = end - new Date(r.createdAt);
  return finished.includes(r.status) ? duration(ms) : duration(ms) + " so far";
}

// workflowNames maps each workflow id of the last sync to its name.
async function workflowNames() {
  try {
    const wf = await api("/v1/workflows");
    return Object.fromEntries(wf.workflows.map((w) => [w.workflowId, w.name || ""]));
  } catch {
    return {}; // the list shows ids alone
  }
}

export async function runsPage(q) {
  const field = (name, label) => h("label", {}, label, h("input", { name, value: q.get(name) || "" }));
  const statuses = ["", "running", "sleeping", "waiting", "completed", "failed", "cancelled", "digested"];
  const form = h("form", { class: "filters", role: "search" },
    h("label", {}, "Status", h("select", { name: "status" },
      statuses.map((s) => h("option", { value: s, selected: (q.get("status") || "") === s }, s || "any")))),
    field("workflowId", "Workflow"), field("subscriberId", "Subscriber"), field("transactionId", "Transaction"),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) p.set(k, v);
    go("/runs" + (p.toString() ? "?" + p : ""));
  });
  const p = new URLSearchParams();
  for (const k of ["status", "workflowId", "subscriberId", "transactionId"]) if (q.get(k)) p.set(k, q.get(k));
  const known = await workflowNames();
  const list = paged("/v1/runs" + (p.toString() ? "?" + p : ""), ["Workflow", "Subscriber", "Status", "Started", "Duration", "Run"],
    (r) => [known[r.workflowId] ? [h("strong", {}, known[r.workflowId]), h("div", { class: "muted" }, h("code", {}, wordy(r.workflowId)))] : h("code", {}, wordy(r.workflowId)),
      r.subscriberId ? link("/subscribers/" + enc(r.subscriberId), r.subscriberId) : h("span", { class: "muted" }, "none"),
      status(r.status), when(r.createdAt), took(r), shortId(r.runId, "/runs/" + enc(r.runId))]);
  show("Runs", form, h("p", { class: "muted" }, "Newest first; updates live."), list);
  await list.reload();
  let timer = null;
  const soon = () => { clearTimeout(timer); timer = setTimeout(() => list.reload(), 300); };
  // Live from the tail's start: what changed between the first read and
  // then is read again once it is live (and after each reconnect).
  tail((ev) => {
    if (ev.aggregate === "run") soon();
  }, (s) => { if (s.state === "live") soon(); });
  onLeave(() => clearTimeout(timer));
}
