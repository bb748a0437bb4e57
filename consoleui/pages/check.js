// Check a deploy: a candidate Bridge URL (a preview deploy of new
// workflow code) replayed against the recorded runs before it replaces
// the Bridge in place; the runs it would break, linked, with the step
// recorded and the step the candidate asks for at the first difference.

import { api } from "../api.js";
import { enc, facts, failure, h, link, shortId, show, status, table } from "../dom.js";

const stepText = (s) => (!s ? "" : s.error ? h("span", { class: "error" }, s.error)
  : s.stepId ? [h("code", {}, s.stepId), " ", h("span", { class: "muted" }, s.type || "")] : h("span", { class: "muted" }, "nothing (the history ends)"));

export async function checkPage() {
  const url = h("input", { id: "bridgeUrl", name: "bridgeUrl", type: "url", required: true, placeholder: "https://preview.example.com/api/herald", size: 48 });
  const secret = h("input", { id: "signingSecret", name: "signingSecret", type: "password", autocomplete: "off", placeholder: "the tenant's, when empty" });
  const workflow = h("input", { id: "checkWorkflow", name: "workflowId", placeholder: "every workflow" });
  const out = h("div", { "aria-live": "polite" });
  const go = h("button", { type: "submit" }, "Check");
  const form = h("form", { class: "filters check" },
    h("label", { for: "bridgeUrl" }, "Candidate Bridge URL", url),
    h("label", { for: "signingSecret" }, "Signing secret (optional)", secret),
    h("label", { for: "checkWorkflow" }, "Workflow (optional)", workflow), go);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { bridgeUrl: url.value.trim() };
    if (secret.value) body.signingSecret = secret.value;
    if (workflow.value.trim()) body.workflowId = workflow.value.trim();
    go.disabled = true;
    out.replaceChildren(h("p", { class: "muted" }, "Replaying the recorded runs against " + body.bridgeUrl + "…"));
    try {
      const res = await api("/v1/checks", { method: "POST", body });
      const unfinished = res.breaking.filter((b) => !["completed", "failed", "cancelled", "digested"].includes(b.status)).length;
      out.replaceChildren(
        h("p", { class: "note verdict " + (unfinished ? "bad" : "good") }, unfinished
          ? unfinished + (unfinished === 1 ? " unfinished run would break" : " unfinished runs would break") + " if this Bridge were deployed."
          : res.breaking.length ? "No unfinished run would break; finished runs differ (below)." : "Safe to deploy: every run checked replays as recorded."),
        facts([["Checked", String(res.checked)], ["Replay as recorded", String(res.ok)], ["Breaking", String(res.breaking.length)]]),
        ...(res.breaking.length ? [h("h2", {}, "Breaking runs"),
          table(["Run", "Workflow", "Status", "Position", "Recorded", "Candidate"], res.breaking.map((b) => [
            shortId(b.runId, "/runs/" + enc(b.runId)), link("/workflows/" + enc(b.workflowId), h("code", {}, b.workflowId)),
            status(b.status), String(b.position), stepText(b.recorded), stepText(b.candidate)]))] : []));
    } catch (e) {
      out.replaceChildren(failure(e));
    } finally {
      go.disabled = false;
    }
  });
  show("Check a deploy",
    h("p", { class: "muted" }, "Replays the recorded runs (every unfinished one first) against a candidate Bridge, running no step body and writing nothing, and lists the runs its code would break."),
    form, out);
}
