// Deliveries: every send's attempts, as GET /v1/deliveries lists them.

import { enc, paged, shortId, show, status, when } from "../dom.js";

export async function deliveriesPage(q) {
  const runId = q.get("runId") || "";
  const list = paged("/v1/deliveries" + (runId ? "?runId=" + enc(runId) : ""), ["Run", "Step", "Channel", "Status", "Provider message id", "Reason or error", "Updated"],
    (d) => [shortId(d.runId, "/runs/" + enc(d.runId)), d.stepId, d.channelKey, status(d.status), shortId(d.providerMessageId),
      d.reason || (d.error ? d.error.code + ": " + d.error.message : ""), when(d.updatedAt)]);
  show("Deliveries", list);
  await list.reload();
}
