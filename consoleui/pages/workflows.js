// Workflows: the tenant's last sync, with schedule, next tick, default
// channels and payload schema.

import { api } from "../api.js";
import { failure, h, json, show, table, when } from "../dom.js";

export async function workflowsPage() {
  let wf;
  try {
    wf = await api("/v1/workflows");
  } catch (e) {
    return show("Workflows", failure(e));
  }
  show("Workflows", table(["Workflow", "Name", "Schedule", "Next tick", "Critical", "Default channels", "Payload schema"],
    wf.workflows.map((w) => [h("code", {}, w.workflowId), w.name ? [h("strong", {}, w.name), w.description ? h("p", { class: "muted" }, w.description) : null] : "",
      w.schedule || "", when(w.nextRunAt), w.critical ? "yes" : "no",
      w.preferences ? Object.entries(w.preferences.channels).map(([k, v]) => k + (v ? " on" : " off")).join(", ") : "",
      w.payloadSchema ? json(w.payloadSchema) : ""])));
}
