// A run's page: its facts, its steps, its deliveries and its timeline
// built from its events, with cancel and rerun.

import { api, tail } from "../api.js";
import { onLeave } from "../route.js";
import { confirmed, duration, enc, facts, failure, h, json, kind, link, notFound, shortId, show, status, when } from "../dom.js";

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

// stepOf is the step an event of the run concerns, by its id.
function stepOf(ev) {
  const d = ev.data || {};
  if (d.step && d.step.stepId !== undefined) return d.step.stepId;
  return d.stepId;
}

// zoned is t as a wall-clock time in the zone tz, its zone named:
// "16:30 Europe/Paris".
function zoned(t, tz) {
  try {
    return new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hour12: false, timeZone: tz || "UTC" }).format(new Date(t)) + " " + (tz || "UTC");
  } catch {
    return t;
  }
}

// holdReason says why a step slept, on its row.
function holdReason(d) {
  if (d.reason === "quiet_hours") return "held for quiet hours until " + zoned(d.until, d.timezone);
  if (d.type === "digest") return ["collecting a digest until ", when(d.until)];
  return ["sleeping until ", when(d.until)];
}

// story derives each step's start, end and reason from the run's events:
// a step starts when the one before it ended (the first when the run
// started) and ends with the last event that names it; a step still
// sleeping or waiting runs on to now.
function story(run, evs, dels) {
  const at = (e) => new Date(e.at).getTime();
  const started = evs.find((e) => e.type === "RunStarted") || evs[0];
  let prev = started ? at(started) : new Date(run.createdAt).getTime();
  const now = Date.now();
  return run.steps.map((s) => {
    const mine = evs.filter((e) => stepOf(e) === s.stepId && s.stepId !== undefined);
    const open = ["sleeping", "waiting", "running"].includes(s.status);
    const end = open ? now : mine.length ? at(mine[mine.length - 1]) : prev;
    const row = { step: s, start: prev, end: Math.max(end, prev), open, reasons: [], sends: dels.filter((d) => d.stepId === s.stepId) };
    for (const e of mine) {
      if (e.type === "RunSleeping") row.reasons.push(holdReason(e.data || {}));
      if (e.type === "RunWaiting") row.reasons.push(["waiting for “" + (e.data || {}).event + "”", (e.data || {}).timeoutAt ? [" until ", when(e.data.timeoutAt)] : null]);
      if (e.type === "RunWaiting") row.waitsFor = (e.data || {}).event;
    }
    for (const d of row.sends) if (d.status === "skipped" && d.reason) row.reasons.push("skipped: " + d.reason);
    if (!open) prev = row.end;
    return row;
  });
}

// oneLine is v as JSON cut to one short line.
function oneLine(v) {
  const t = JSON.stringify(v);
  return t.length > 80 ? t.slice(0, 79) + "…" : t;
}

// folded shows v on one line, opened on demand to the whole.
function folded(v) {
  if (v === null || v === undefined) return "";
  return h("details", { class: "fold" }, h("summary", {}, h("code", {}, oneLine(v))), json(v));
}

// bar draws [start, end] on the axis [from, to].
function bar(from, to, start, end, status) {
  const span = Math.max(to - from, 1);
  const x = ((start - from) / span) * 100;
  const w = Math.max(((end - start) / span) * 100, 0.8);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 100 10");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("class", "bar");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "from " + duration(start - from) + " to " + duration(end - from) + " after the start");
  const track = document.createElementNS(svg.namespaceURI, "rect");
  for (const [k, v] of Object.entries({ x: 0, y: 3, width: 100, height: 4, class: "track" })) track.setAttribute(k, v);
  const r = document.createElementNS(svg.namespaceURI, "rect");
  for (const [k, v] of Object.entries({ x: Math.min(x, 99.2), y: 1, width: Math.min(w, 100 - Math.min(x, 99.2)), height: 8, rx: 1, class: "fill " + status })) r.setAttribute(k, v);
  svg.append(track, r);
  return svg;
}

// sendDetail is what a send's row opens to: each try with its channel,
// address, status and what the provider said.
function sendDetail(sends) {
  if (!sends.length) return null;
  return h("details", { class: "fold" }, h("summary", {}, sends.length === 1 ? "1 delivery" : sends.length + " deliveries"),
    sends.map((d) => facts([["Channel", [kind(d.kind), " ", d.channelKey]], ["Address", d.address], ["Status", status(d.status)],
      ["Provider message id", shortId(d.providerMessageId)], ["Reason", d.reason], ["Error", d.error ? d.error.code + ": " + d.error.message : null],
      ["Heard from the provider", (d.events || []).length ? (d.events || []).map((e) => [e.type + (e.detail ? " (" + e.detail + ")" : "") + " ", when(e.at), " "]) : null],
      ["Sent", when(d.createdAt)]])));
}

const openRaw = new Set(); // runs whose raw events are open, kept across reloads of the page

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
  const act = (path, body = {}) => async () => {
    try {
      await api(path, { method: "POST", body });
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
  const rows = story(run, evs.data, dels.data);
  const waiting = rows.find((r) => r.waitsFor && r.open);
  const signal = run.status === "waiting" ? signalForm(id, waiting ? waiting.waitsFor : "", again) : null;
  if (signal) actions.append(signal.button);

  const cancelled = evs.data.filter((e) => e.type === "RunCancelled").pop();
  const reruns = evs.data.filter((e) => e.type === "RunRerun");
  const from = rows.length ? rows[0].start : new Date(run.createdAt).getTime();
  const to = Math.max(from + 1, ...rows.map((r) => r.end));
  const steps = h("div", { class: "table steps" }, h("table", {},
    h("thead", {}, h("tr", {}, ["Step", "Type", "Status", "Started", "Duration", "Attempts", "Timeline", "Output or error"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.length ? rows.map((r) => {
      const s = r.step;
      const cells = [
        [h("code", {}, s.stepId || "(the Bridge call)"), r.reasons.map((why) => h("div", { class: "reason" }, why))],
        [s.type, " ", [...new Set(r.sends.map((d) => d.kind))].map((k) => kind(k, true))], status(s.status), when(new Date(r.start).toISOString()),
        r.open ? duration(r.end - r.start) + " so far" : duration(r.end - r.start), s.attempts,
        bar(from, to, r.start, r.end, s.status),
        [s.error ? h("span", { class: "error" }, s.error.code + ": " + s.error.message) : folded(s.output), sendDetail(r.sends)]];
      const labels = ["Step", "Type", "Status", "Started", "Duration", "Attempts", "Timeline", "Output or error"];
      return h("tr", { "data-step": s.stepId }, cells.map((c, i) => h("td", { "data-label": labels[i] }, h("div", { class: "cell" }, c))));
    }) : h("tr", { class: "none" }, h("td", { colspan: 8, class: "muted" }, "No step yet.")))));

  const raw = h("details", { class: "raw", open: openRaw.has(id) }, h("summary", {}, "Raw events (" + evs.data.length + ")"),
    evs.truncated ? h("p", { class: "muted" }, "The first events only: this run has more.") : null,
    h("ol", { class: "timeline" }, evs.data.map((ev) => h("li", {},
      h("strong", {}, ev.type), " ", h("span", { class: "muted" }, when(ev.at), " · #" + ev.seq), describe(ev, ev.data || {})))));
  raw.addEventListener("toggle", () => (raw.open ? openRaw.add(id) : openRaw.delete(id)));

  show(["Run ", h("span", { class: "title-id" }, run.runId)],
    cancelled ? h("p", { class: "note" }, "Cancelled by " + ((cancelled.data || {}).actor || "the tenant"),
      (cancelled.data || {}).reason ? ": " + cancelled.data.reason : "", " · ", when(cancelled.at)) : null,
    reruns.map((e) => h("p", { class: "note" }, "Rerun by " + ((e.data || {}).actor || "the tenant") + ", resumed at " + ((e.data || {}).stepId || "the Bridge call") + " · ", when(e.at))),
    facts([["Status", status(run.status)], ["Workflow", run.workflowId],
      ["Subscriber", run.subscriberId ? link("/subscribers/" + enc(run.subscriberId), run.subscriberId) : "none (a schedule's run)"],
      ["Transaction", shortId(run.transactionId, "/runs?transactionId=" + enc(run.transactionId))],
      ["Started", when(run.createdAt)], ["Updated", when(run.updatedAt)],
      ["Took", ["completed", "failed", "cancelled", "digested"].includes(run.status) ? duration(new Date(run.updatedAt) - new Date(run.createdAt)) : null],
      ["Error", run.error ? h("span", { class: "error" }, run.error.code + ": " + run.error.message) : null]]),
    actions, signal ? signal.form : null, msg,
    h("h2", {}, "Steps"), steps, raw);
  if (!["completed", "failed", "cancelled", "digested"].includes(run.status)) {
    let timer = null;
    const soon = () => { clearTimeout(timer); timer = setTimeout(again, 300); };
    // The tail carries what happens once it is live, not before: what the
    // run did between this page's reads and then (a signal sent from this
    // page resumes it at once) is read again, and shown if it differs.
    const seen = shape(run, evs.data, dels.data);
    tail((ev) => {
      if (ev.id !== id && !(ev.aggregate === "delivery")) return;
      soon();
    }, async (s) => {
      if (s.state !== "live") return;
      try {
        const [r, e, d] = await Promise.all([api("/v1/runs/" + enc(id)), api("/v1/runs/" + enc(id) + "/events"),
          api("/v1/deliveries?runId=" + enc(id) + "&limit=200")]);
        if (shape(r, e.data, d.data) !== seen) soon();
      } catch {
        soon(); // show the page anew, with what failed
      }
    });
    onLeave(() => clearTimeout(timer));
  }
}

// shape sums up what a run's page shows of a run, to tell whether it
// changed since the page read it.
function shape(run, evs, dels) {
  return JSON.stringify([run.status, run.updatedAt, evs.length, dels.map((d) => [d.attemptId, d.status, (d.events || []).length])]);
}

// signalForm is "Send signal" for a waiting run: the event it waits for,
// prefilled, and a JSON payload, sent once confirmed.
function signalForm(id, event, again) {
  const form = h("form", { class: "signal", hidden: true });
  const name = h("input", { name: "event", id: "signalEvent", value: event, required: true });
  const payload = h("textarea", { name: "payload", id: "signalPayload", rows: 4 }, "{}");
  const out = h("div", { "aria-live": "polite" });
  const button = h("button", { type: "button" }, "Send signal");
  button.addEventListener("click", () => { form.hidden = !form.hidden; if (!form.hidden) name.focus(); });
  form.append(h("label", { for: "signalEvent" }, "Event", name), h("label", { for: "signalPayload" }, "Payload (JSON)", payload),
    confirmed("Send", "Really send this signal to the run?", "Yes, send", async () => {
      let body;
      try {
        body = JSON.parse(payload.value || "null");
      } catch (e) {
        out.replaceChildren(failure(new Error("the payload is not JSON: " + e.message)));
        return;
      }
      try {
        await api("/v1/events/" + enc(id) + "/signal", { method: "POST", body: { event: name.value, payload: body } });
        again();
      } catch (e) {
        out.replaceChildren(failure(e));
      }
    }), out);
  form.addEventListener("submit", (ev) => ev.preventDefault());
  return { button, form };
}
