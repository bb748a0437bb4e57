// Transactions: every trigger (broadcasts and cron ticks included),
// newest first, each with a progress bar of its runs against its
// recipients, refreshed while one fans out or runs, and a Cancel button
// that ends its unfinished runs, those its fan-out has not started yet
// included.

import { api } from "../api.js";
import { onLeave } from "../route.js";
import { confirmed, enc, failure, h, link, shortId, show, status, table, when } from "../dom.js";

const active = (t) => t.status === "fanning_out" || t.status === "running";
const ended = (r) => r.completed + r.failed + r.cancelled + r.digested;

// width sets el's width in per cent through the CSSOM (the console's
// policy refuses inline style attributes).
function width(el, pct) {
  el.style.width = pct + "%";
  return el;
}

// progress is the transaction's bar: the runs started and finished
// against its recipients (the runs started while the count is unknown).
export function progress(t) {
  const of = t.recipients ?? t.runs.started;
  const done = ended(t.runs);
  const pct = of ? Math.min(100, Math.round((100 * done) / of)) : t.status === "finished" ? 100 : 0;
  const started = of ? Math.min(100, Math.round((100 * t.runs.started) / of)) : 0;
  const label = done + " of " + (t.recipients ?? "?") + " finished" + (t.runs.started > done ? ", " + (t.runs.started - done) + " under way" : "");
  return h("div", { class: "txbar", "data-status": t.status },
    h("div", { class: "track", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": pct, "aria-valuetext": label, "aria-label": "Progress of " + t.transactionId },
      width(h("div", { class: "started" }), started), width(h("div", { class: "done" }), pct)),
    h("span", { class: "muted" }, label));
}

const counts = (t) => {
  const r = t.runs;
  const parts = [["running", r.running], ["completed", r.completed], ["failed", r.failed], ["cancelled", r.cancelled], ["digested", r.digested]]
    .filter(([, n]) => n).map(([k, n]) => n + " " + k);
  const d = t.deliveries;
  return [h("div", {}, parts.join(", ") || "no run yet"), h("div", { class: "muted" }, d.sent + " sent, " + d.skipped + " skipped, " + d.failed + " failed")];
};

export async function transactionsPage() {
  const msg = h("div", { "aria-live": "polite" });
  const list = h("div");
  const more = h("button", { type: "button", hidden: true }, "Load more");
  let shown = []; // the pages loaded so far, refreshed together
  let cursor = null;
  let timer = null;
  let left = false;
  let last = "";
  onLeave(() => { left = true; clearTimeout(timer); });

  function draw() {
    list.replaceChildren(table(["Transaction", "Workflow", "Status", "Progress", "Runs and sends", "Started", ""], shown.map((t) => [
      h("span", { "data-transaction": t.transactionId }, shortId(t.transactionId, "/runs?transactionId=" + enc(t.transactionId))),
      link("/workflows/" + enc(t.workflowId), h("code", {}, t.workflowId)), status(t.status), progress(t), counts(t), when(t.createdAt),
      active(t) ? confirmed("Cancel", "Cancel every unfinished run of this transaction?", "Yes, cancel it", async () => {
        try {
          const res = await api("/v1/transactions/" + enc(t.transactionId) + "/cancel", { method: "POST", body: {} });
          msg.replaceChildren(h("p", { class: "note" }, "Cancelled ", String(res.cancelled), res.cancelled === 1 ? " run of " : " runs of ", shortId(t.transactionId)));
        } catch (e) {
          msg.replaceChildren(failure(e));
        }
        await refresh(true);
      }, "danger") : ""])));
  }

  // refresh reads the loaded transactions again, as many as are shown;
  // force redraws them even under a confirmation (the one just answered).
  async function refresh(force) {
    clearTimeout(timer);
    try {
      const page = await api("/v1/transactions?limit=" + Math.max(25, Math.min(shown.length, 100)));
      if (left) return;
      shown = page.data;
      cursor = page.nextCursor;
      more.hidden = !cursor;
      // Redrawn only when something changed, and never under a
      // confirmation under way.
      const now = JSON.stringify(shown);
      if (force || (now !== last && !list.querySelector(".confirm button + button"))) {
        last = now;
        draw();
      }
    } catch (e) {
      msg.replaceChildren(failure(e));
    }
    // Every second while one is unfinished, else every five (a new
    // trigger appears).
    if (!left) timer = setTimeout(refresh, shown.some(active) ? 1000 : 5000);
  }
  more.addEventListener("click", async () => {
    try {
      const page = await api("/v1/transactions?limit=25&cursor=" + enc(cursor));
      shown = shown.concat(page.data);
      cursor = page.nextCursor;
      more.hidden = !cursor;
      draw();
    } catch (e) {
      msg.replaceChildren(failure(e));
    }
  });
  show("Transactions", h("p", { class: "muted" }, "Every trigger, newest first, with its runs against its recipients, kept current while you look."), msg, list, more);
  await refresh();
}
