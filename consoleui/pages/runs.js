// Runs: newest first, filtered by status, workflow, subscriber and
// transaction, updating live.

import { tail } from "../api.js";
import { go, onLeave } from "../route.js";
import { enc, h, paged, shortId, show, status, when } from "../dom.js";

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
  const list = paged("/v1/runs" + (p.toString() ? "?" + p : ""), ["Run", "Workflow", "Subscriber", "Status", "Updated"],
    (r) => [shortId(r.runId, "/runs/" + enc(r.runId)), r.workflowId, r.subscriberId || "", status(r.status), when(r.updatedAt)]);
  show("Runs", form, h("p", { class: "muted" }, "Newest first; updates live."), list);
  await list.reload();
  let timer = null;
  tail((ev) => {
    if (ev.aggregate !== "run") return;
    clearTimeout(timer);
    timer = setTimeout(() => list.reload(), 300);
  });
  onLeave(() => clearTimeout(timer));
}
