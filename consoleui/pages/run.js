// A run's page: its facts, its steps, its deliveries and its timeline
// built from its events, with cancel and rerun.

import { api, tail } from "../api.js";
import { onLeave } from "../route.js";
import { confirmed, enc, facts, failure, h, json, link, notFound, shortId, show, status, table, when } from "../dom.js";

// describe says what one event of a run's timeline means.
function describe(ev, d) {
  switch (ev.type) {
    case "TriggerAccepted": return [facts([["Transaction", d.transactionId], ["Workflow", d.workflowId]]), d.payload !== undefined ? json(d.payload) : null];
    case "RunStarted": return facts([["Transaction", d.transactionId], ["Workflow", d.workflowId], ["Subscriber", d.subscriberId]]);
    case "RunSubscriberRecorded": return [d.step ? stepDone(d.step) : null, h("p", { class: "muted" }, "Subscriber recorded for the Bridge")];
    case "StepCompleted": return stepDone(d);
    case "StepFailed": return [facts([["Step", d.stepId || "(the Bridge call)"], ["Type", d.type], ["Attempt", d.attempt],
      ["Retry at", when(d.retryAt)]]), h("p", { class: "error" }, d.code + ": " + d.message)];
    case "RunSleeping": return facts([["Step", d.stepId], ["Type", d.type || "delay"], ["Until", when(d.until)],
      ["Why", d.reason === "quiet_hours" ? "held for the subscriber's quiet hours" + (d.timezone ? " (" + d.timezone + ")" : "") : d.reason]]);
    case "RunWaiting": return facts([["Step", d.stepId], ["Event", d.event], ["Timeout", when(d.timeoutAt || d.until)]]);
    case "SignalReceived": return [facts([["Event", d.event]]), d.payload !== undefined ? json(d.payload) : null];
    case "RunCompleted": return d && d.step ? stepDone(d.step) : null;
    case "RunFailed": return h("p", { class: "error" }, (d.stepId ? d.stepId + ": " : "") + d.code + ": " + d.message);
    case "RunCancelled": return facts([["Reason", d.reason || "cancelled by the tenant"], ["By", d.actor],
      ["At its start", d.atStart ? "yes: its transaction was cancelled before it started" : null]]);
    case "RunRerun": return facts([["Resumes at", d.stepId || "(the Bridge call)"], ["After", d.code + ": " + d.message], ["By", d.actor]]);
    default: return d === null ? null : json(d);
  }
}

function stepDone(d) {
  return [facts([["Step", d.stepId], ["Type", d.type]]), d.output !== undefined ? json(d.output) : null];
}

let rerunRoute = null; // whether the API serves POST /v1/runs/{runId}/rerun

async function canRerun() {
  if (rerunRoute === null) {
    try {
      const doc = await (await fetch("/v1/openapi.json")).json();
      rerunRoute = !!(doc.paths && doc.paths["/v1/runs/{runId}/rerun"]);
    } catch {
      rerunRoute = false;
    }
  }
  return rerunRoute;
}

export async function runPage(id, again) {
  let run, evs, dels;
  try {
    [run, evs, dels] = await Promise.all([api("/v1/runs/" + enc(id)), api("/v1/runs/" + enc(id) + "/events"),
      api("/v1/deliveries?runId=" + enc(id) + "&limit=200")]);
  } catch (e) {
    if (e.status === 404) return notFound("Run " + id);
    return show("Run " + id, failure(e));
  }
  const msg = h("div", { "aria-live": "polite" });
  const act = (path) => async () => {
    try {
      await api(path, { method: "POST", body: {} });
      again();
    } catch (e) {
      msg.replaceChildren(failure(e));
    }
  };
  const actions = h("div", { class: "actions" });
  if (["running", "sleeping", "waiting"].includes(run.status)) {
    actions.append(confirmed("Cancel run", "Really cancel this run?", "Yes, cancel", act("/v1/runs/" + enc(id) + "/cancel"), "danger"));
  }
  if (run.status === "failed" && await canRerun()) {
    actions.append(confirmed("Rerun", "Really rerun this run?", "Yes, rerun", act("/v1/runs/" + enc(id) + "/rerun")));
  }

  const timeline = h("ol", { class: "timeline" }, evs.data.map((ev) => h("li", {},
    h("strong", {}, ev.type), " ", h("span", { class: "muted" }, when(ev.at), " · #" + ev.seq), describe(ev, ev.data || {}))));
  show("Run " + run.runId,
    facts([["Status", status(run.status)], ["Workflow", run.workflowId],
      ["Subscriber", run.subscriberId ? link("/subscribers/" + enc(run.subscriberId), run.subscriberId) : "none (a schedule's run)"],
      ["Transaction", link("/runs?transactionId=" + enc(run.transactionId), run.transactionId)],
      ["Started", when(run.createdAt)], ["Updated", when(run.updatedAt)],
      ["Error", run.error ? h("span", { class: "error" }, run.error.code + ": " + run.error.message) : null]]),
    actions, msg,
    h("h2", {}, "Steps"),
    table(["Step", "Type", "Status", "Attempts", "Output or error"], run.steps.map((s) => [h("code", {}, s.stepId || "(the Bridge call)"), s.type,
      status(s.status), s.attempts, s.error ? h("span", { class: "error" }, s.error.code + ": " + s.error.message) : (s.output === null ? "" : json(s.output))])),
    h("h2", {}, "Deliveries"),
    table(["Step", "Channel", "Kind", "Status", "Provider message id", "Reason or error", "Heard from the provider"], dels.data.map((d) => [d.stepId, d.channelKey, d.kind,
      status(d.status), shortId(d.providerMessageId), d.reason || (d.error ? d.error.code + ": " + d.error.message : ""),
      (d.events || []).map((e) => [e.type + (e.detail ? " (" + e.detail + ")" : "") + " ", when(e.at), "; "])])),
    h("h2", {}, "Timeline"), evs.truncated ? h("p", { class: "muted" }, "The first events only: this run has more.") : null, timeline);
  if (!["completed", "failed", "cancelled", "digested"].includes(run.status)) {
    let timer = null;
    tail((ev) => {
      if (ev.id !== id && !(ev.aggregate === "delivery")) return;
      clearTimeout(timer);
      timer = setTimeout(again, 300);
    });
    onLeave(() => clearTimeout(timer));
  }
}
