// A trigger's dry run: who the trigger would reach and what each kind's
// send would do for them (send, skipped by reason, held, failed), with
// the first recipients one by one, before the real trigger is confirmed.
// Nothing is written and no Bridge is called.

import { api } from "../api.js";
import { failure, h, table } from "../dom.js";

// outcomes lists a kind's counts: send, then each skipped, held and
// failed reason with its count.
function outcomes(k) {
  const parts = [["send", k.send]];
  for (const group of ["skipped", "held", "failed"]) {
    for (const [reason, n] of Object.entries(k[group] || {})) parts.push([group + ": " + reason.replace(/_/g, " "), n]);
  }
  return parts;
}

// dryRunButton asks POST /v1/events?dryRun=true with the body build
// makes (null when the form is not ready) and shows the answer in out.
export function dryRunButton(build, out) {
  const b = h("button", { type: "button", class: "dry-run" }, "Dry run");
  b.addEventListener("click", async () => {
    const body = build();
    if (!body) return;
    b.disabled = true;
    try {
      const res = await api("/v1/events?dryRun=true", { method: "POST", body });
      const kinds = Object.keys(res.byKind).sort();
      out.replaceChildren(h("section", { class: "dryrun", "aria-label": "Dry run" },
        h("p", { class: "note" }, "Dry run: the trigger would reach ", h("strong", { "data-count": "recipients" }, String(res.recipients)),
          res.recipients === 1 ? " subscriber." : " subscribers.", " Nothing was sent."),
        kinds.length ? h("div", { class: "figures" }, kinds.map((kind) => h("div", { class: "figure", "data-kind": kind },
          h("div", { class: "label" }, h("strong", {}, kind)),
          h("ul", { class: "outcomes" }, outcomes(res.byKind[kind]).map(([what, n]) =>
            h("li", { "data-outcome": what }, h("span", { class: "value" }, String(n)), " ", what)))))) : h("p", { class: "muted" }, "No channel kind to decide."),
        res.sample.length ? [h("h3", {}, "The first " + res.sample.length + (res.sample.length === 1 ? " recipient" : " recipients")),
          table(["Subscriber", ...kinds], res.sample.map((s) => [h("code", {}, s.subscriberId), ...kinds.map((k) => s.kinds[k] || "")]))] : null));
    } catch (e) {
      out.replaceChildren(failure(e));
    } finally {
      b.disabled = false;
    }
  });
  return b;
}
