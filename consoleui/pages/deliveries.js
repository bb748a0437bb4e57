// Deliveries: every send's attempts, as GET /v1/deliveries lists them.

import { enc, link, paged, show, status, when } from "../dom.js";

export async function deliveriesPage(q) {
  const runId = q.get("runId") || "";
  const list = paged("/v1/deliveries" + (runId ? "?runId=" + enc(runId) : ""), ["Run", "Step", "Channel", "Status", "Provider message id", "Reason or error", "Updated"],
    (d) => [link("/runs/" + enc(d.runId), d.runId), d.stepId, d.channelKey, status(d.status), d.providerMessageId || "",
      d.reason || (d.error ? d.error.code + ": " + d.error.message : ""), when(d.updatedAt)]);
  show("Deliveries", list);
  await list.reload();
}
