// The Herald console: every page rendered in the browser from the public
// REST API, with the tenant API key kept in this tab's sessionStorage.
// Every value from the API is written as text (textContent), never as
// markup. No dependency, no build step.

const KEY = "herald.apiKey";
const BASE = "/console";
const main = document.getElementById("main");
const nav = document.getElementById("nav");
let leave = []; // what the current page must stop when the next one opens

// h builds an element: attrs (with on* handlers), then children (nodes,
// strings, numbers; null and false are skipped).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const link = (path, text) => h("a", { href: BASE + path }, text);
const status = (s) => h("span", { class: "status " + s }, s);
const json = (v) => h("pre", {}, JSON.stringify(v, null, 2));
const when = (t) => (t ? new Date(t).toLocaleString() : "");
const enc = encodeURIComponent;

class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || "the API answered " + status);
    this.status = status;
    this.code = e.code || "";
  }
}

// api calls the REST API with the signed-in key.
async function api(path, opts = {}) {
  const headers = { Authorization: "Bearer " + (opts.key || sessionStorage.getItem(KEY) || "") };
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: opts.method || "GET", headers, signal: opts.signal,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  const body = text ? JSON.parse(text) : null;
  if (!res.ok) {
    if (res.status === 401 && !opts.key) signOut();
    throw new APIError(res.status, body);
  }
  return body;
}

// tail follows GET /v1/tail, calling onEvent with each event, until the
// page is left. It reconnects after a break; a refused key (the server
// ends the tail when its key is revoked) signs out.
function tail(onEvent) {
  const ctl = new AbortController();
  leave.push(() => ctl.abort());
  (async () => {
    while (!ctl.signal.aborted) {
      try {
        const res = await fetch("/v1/tail", { headers: { Authorization: "Bearer " + sessionStorage.getItem(KEY) }, signal: ctl.signal });
        if (res.status === 401) return signOut(); // the key was revoked
        if (!res.ok) throw new Error("tail " + res.status);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
            if (data) onEvent(JSON.parse(data));
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
  })();
}

function signOut() {
  sessionStorage.removeItem(KEY);
  go("/runs");
}

function go(path) {
  history.pushState(null, "", BASE + path);
  render();
}

// show replaces the page's content and moves the focus to its heading.
function show(title, ...content) {
  const h1 = h("h1", { tabindex: "-1" }, title);
  main.replaceChildren(h1, ...content.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  document.title = title + " · Herald console";
  h1.focus();
}

function notFound(what) {
  show("Not found", h("p", {}, what + " was not found."), link("/runs", "Back to runs"));
}

function failure(e) {
  return h("p", { class: "error", role: "alert" }, e.message + (e.code ? " (" + e.code + ")" : ""));
}

function table(headers, rows) {
  return h("div", { class: "table" }, h("table", {},
    h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.length ? rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))
      : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "Nothing yet.")))));
}

function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// paged lists a paged route, with a button for the next page.
function paged(path, headers, row) {
  const body = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const box = h("div", {}, h("div", { class: "table" }, h("table", {},
    h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))), body)), more);
  let cursor = null;
  async function load(reset) {
    const sep = path.includes("?") ? "&" : "?";
    try {
      const page = await api(path + (cursor && !reset ? sep + "cursor=" + enc(cursor) : ""));
      if (reset) body.replaceChildren();
      for (const item of page.data) body.append(h("tr", {}, row(item).map((c) => h("td", {}, c))));
      if (!body.children.length) body.append(h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "Nothing yet.")));
      cursor = page.nextCursor;
      more.hidden = !cursor;
    } catch (e) {
      body.replaceChildren(h("tr", {}, h("td", { colspan: headers.length }, failure(e))));
    }
  }
  more.addEventListener("click", () => load(false));
  box.reload = () => { cursor = null; return load(true); };
  return box;
}

// ---- pages -----------------------------------------------------------

function signIn() {
  nav.hidden = true;
  const input = h("input", { name: "apiKey", id: "apiKey", type: "password", autocomplete: "off", required: true });
  const msg = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "signin" },
    h("label", { for: "apiKey" }, "Tenant API key", input),
    h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    msg.replaceChildren();
    try {
      await api("/v1/workflows", { key: input.value });
      sessionStorage.setItem(KEY, input.value);
      render();
    } catch (e) {
      msg.replaceChildren(failure(e));
    }
  });
  show("Sign in", h("p", { class: "muted" }, "Sign in with one of your tenant's API keys. It stays in this tab only."), form, msg);
  input.focus();
}

async function runsPage(q) {
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
    (r) => [link("/runs/" + enc(r.runId), r.runId), r.workflowId, r.subscriberId || "", status(r.status), when(r.updatedAt)]);
  show("Runs", form, h("p", { class: "muted" }, "Newest first; updates live."), list);
  await list.reload();
  let timer = null;
  tail((ev) => {
    if (ev.aggregate !== "run") return;
    clearTimeout(timer);
    timer = setTimeout(() => list.reload(), 300);
  });
  leave.push(() => clearTimeout(timer));
}

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

async function runPage(id) {
  let run, evs, dels;
  try {
    [run, evs, dels] = await Promise.all([api("/v1/runs/" + enc(id)), api("/v1/runs/" + enc(id) + "/events"),
      api("/v1/deliveries?runId=" + enc(id) + "&limit=200")]);
  } catch (e) {
    if (e.status === 404) return notFound("Run " + id);
    return show("Run " + id, failure(e));
  }
  const actions = h("div", { class: "actions" });
  const msg = h("div", { "aria-live": "polite" });
  const confirmable = (label, path, verb) => {
    const b = h("button", { type: "button", class: "danger" }, label);
    b.addEventListener("click", () => {
      const yes = h("button", { type: "button", class: "danger" }, "Yes, " + verb);
      const no = h("button", { type: "button" }, "No");
      no.addEventListener("click", () => { actions.replaceChildren(...buttons); b.focus(); });
      yes.addEventListener("click", async () => {
        try {
          await api(path, { method: "POST", body: {} });
          render();
        } catch (e) {
          msg.replaceChildren(failure(e));
        }
      });
      actions.replaceChildren(h("span", {}, "Really " + verb + " this run?"), yes, no);
      yes.focus();
    });
    return b;
  };
  const buttons = [];
  if (["running", "sleeping", "waiting"].includes(run.status)) buttons.push(confirmable("Cancel run", "/v1/runs/" + enc(id) + "/cancel", "cancel"));
  if (run.status === "failed" && await canRerun()) buttons.push(confirmable("Rerun", "/v1/runs/" + enc(id) + "/rerun", "rerun"));
  actions.replaceChildren(...buttons);

  const timeline = h("ol", { class: "timeline" }, evs.data.map((ev) => h("li", {},
    h("strong", {}, ev.type), " ", h("span", { class: "muted" }, when(ev.at) + " · #" + ev.seq), describe(ev, ev.data || {}))));
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
      status(d.status), d.providerMessageId || "", d.reason || (d.error ? d.error.code + ": " + d.error.message : ""),
      (d.events || []).map((e) => e.type + (e.detail ? " (" + e.detail + ")" : "") + " " + when(e.at)).join("; ")])),
    h("h2", {}, "Timeline"), evs.truncated ? h("p", { class: "muted" }, "The first events only: this run has more.") : null, timeline);
  if (!["completed", "failed", "cancelled", "digested"].includes(run.status)) {
    let timer = null;
    tail((ev) => {
      if (ev.id !== id && !(ev.aggregate === "delivery")) return;
      clearTimeout(timer);
      timer = setTimeout(render, 300);
    });
    leave.push(() => clearTimeout(timer));
  }
}

async function subscribersPage() {
  const input = h("input", { name: "subscriberId", id: "findSubscriber" });
  const form = h("form", { class: "filters", role: "search" }, h("label", { for: "findSubscriber" }, "Subscriber id", input),
    h("button", { type: "submit" }, "Open"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); if (input.value) go("/subscribers/" + enc(input.value)); });
  const list = paged("/v1/subscribers", ["Subscriber", "Contacts", "Locale", "Updated"],
    (s) => [link("/subscribers/" + enc(s.subscriberId), s.subscriberId), Object.entries(s.contacts).map(([k, v]) => k + ": " + v.join(", ")).join("; "),
      s.locale || "", when(s.updatedAt)]);
  show("Subscribers", form, list);
  await list.reload();
}

async function subscriberPage(id) {
  let sub;
  try {
    sub = await api("/v1/subscribers/" + enc(id));
  } catch (e) {
    if (e.status === 404) return notFound("Subscriber " + id);
    return show("Subscriber " + id, failure(e));
  }
  const safe = async (p) => { try { return await p; } catch (e) { return { failed: e }; } };
  const [prefs, subs, inbox, supp] = await Promise.all([safe(api("/v1/subscribers/" + enc(id) + "/preferences")),
    safe(api("/v1/subscribers/" + enc(id) + "/subscriptions")), safe(api("/v1/subscribers/" + enc(id) + "/inbox")),
    safe(api("/v1/suppressions?limit=200"))]);
  const addresses = new Set(Object.values(sub.contacts).flat());
  const runs = paged("/v1/runs?subscriberId=" + enc(id), ["Run", "Workflow", "Status", "Updated"],
    (r) => [link("/runs/" + enc(r.runId), r.runId), r.workflowId, status(r.status), when(r.updatedAt)]);
  const or = (v, f) => (v.failed ? failure(v.failed) : f(v));
  const why = whyBox(id);
  show("Subscriber " + sub.subscriberId,
    facts([["Locale", sub.locale], ["Time zone", sub.timezone], ["Created", when(sub.createdAt)], ["Updated", when(sub.updatedAt)]]),
    h("h2", {}, "Contacts"), table(["Kind", "Addresses"], Object.entries(sub.contacts).map(([k, v]) => [k, v.join(", ")])),
    sub.attributes ? [h("h2", {}, "Attributes"), json(sub.attributes)] : null,
    h("h2", {}, "Would a send go out now?"), why,
    h("h2", {}, "Preferences"), or(prefs, (p) => json(p)),
    h("h2", {}, "Subscriptions"), or(subs, (s) => table(["Topic"], (s.data || []).map((t) => [t.topicKey || t.key || JSON.stringify(t)]))),
    h("h2", {}, "Runs"), runs,
    h("h2", {}, "Inbox"), or(inbox, (m) => table(["Message", "Subject", "Body", "Read"], (m.data || []).map((x) => [x.messageId, x.subject || "", x.body, x.readAt ? when(x.readAt) : "unread"]))),
    h("h2", {}, "Suppressions of its addresses"), or(supp, (s) => table(["Kind", "Address", "Reason"],
      (s.data || []).filter((x) => addresses.has(x.address)).map((x) => [x.kind, x.address, x.reason || ""]))));
  await runs.reload();
}

// whyBox answers, for a workflow picked from the tenant's, whether a send
// of each kind to the subscriber would go out now, and why not: the
// server decides, with the send path's own code.
function whyBox(id) {
  const select = h("select", { name: "workflowId", id: "whyWorkflow" }, h("option", { value: "" }, "any workflow"));
  const out = h("div", { "aria-live": "polite" });
  const load = async () => {
    try {
      const e = await api("/v1/subscribers/" + enc(id) + "/explain" + (select.value ? "?workflowId=" + enc(select.value) : ""));
      out.replaceChildren(table(["Kind", "Goes out", "Why not", "Channels tried"], e.kinds.map((k) => [k.kind,
        k.sends ? (k.heldUntil ? "held for quiet hours until " + when(k.heldUntil) : "yes") : "no",
        k.reason ? h("code", {}, k.reason) : "", k.channels.join(", ")])));
    } catch (err) {
      out.replaceChildren(failure(err));
    }
  };
  select.addEventListener("change", load);
  api("/v1/workflows").then((wf) => {
    for (const w of wf.workflows) select.append(h("option", { value: w.workflowId }, w.workflowId));
  }).catch(() => {});
  load();
  return h("div", {}, h("label", { for: "whyWorkflow" }, "Workflow", select), out);
}

async function topicsPage() {
  const list = paged("/v1/topics", ["Topic", "Name", "Subscribers"], (t) => [t.key, t.name || "", t.subscriberCount ?? ""]);
  show("Topics", list);
  await list.reload();
}

async function workflowsPage() {
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

async function deliveriesPage(q) {
  const runId = q.get("runId") || "";
  const list = paged("/v1/deliveries" + (runId ? "?runId=" + enc(runId) : ""), ["Run", "Step", "Channel", "Status", "Provider message id", "Reason or error", "Updated"],
    (d) => [link("/runs/" + enc(d.runId), d.runId), d.stepId, d.channelKey, status(d.status), d.providerMessageId || "",
      d.reason || (d.error ? d.error.code + ": " + d.error.message : ""), when(d.updatedAt)]);
  show("Deliveries", list);
  await list.reload();
}

async function webhooksPage() {
  let hooks;
  try {
    hooks = await api("/v1/webhooks");
  } catch (e) {
    return show("Webhooks", failure(e));
  }
  const sections = await Promise.all(hooks.data.map(async (w) => {
    let attempts;
    try {
      attempts = table(["Event", "Type", "Status", "Answer", "Attempt", "At"], (await api("/v1/webhooks/" + enc(w.webhookId) + "/attempts")).data
        .map((a) => [a.eventId, a.type, status(a.status), a.httpStatus || "", a.attempt, when(a.createdAt)]));
    } catch (e) {
      attempts = failure(e);
    }
    return [h("h2", {}, w.url), facts([["Id", w.webhookId], ["Events", w.events.join(", ")], ["Enabled", w.enabled ? "yes" : "no"]]), attempts];
  }));
  show("Webhooks", hooks.data.length ? sections : h("p", { class: "muted" }, "No endpoints."));
}

function tailPage() {
  const list = h("ol", { class: "timeline", "aria-live": "off" });
  let paused = false;
  const pause = h("button", { type: "button", "aria-pressed": "false" }, "Pause");
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(paused));
  });
  show("Live tail", h("div", { class: "actions" }, pause), h("p", { class: "muted" }, "Your tenant's events as they are appended."), list);
  tail((ev) => {
    if (paused) return;
    const target = ev.aggregate === "run" ? link("/runs/" + enc(ev.id), ev.id)
      : ev.aggregate === "subscriber" ? link("/subscribers/" + enc(ev.id), ev.id) : ev.id;
    list.prepend(h("li", { class: "event" }, h("strong", {}, ev.type), " ", h("span", { class: "muted" }, ev.aggregate + " "), target,
      " ", h("span", { class: "muted" }, when(ev.at) + " · #" + ev.seq)));
    while (list.children.length > 500) list.lastChild.remove();
  });
}

// ---- routing ---------------------------------------------------------

async function render() {
  for (const f of leave) f();
  leave = [];
  if (!sessionStorage.getItem(KEY)) return signIn();
  nav.hidden = false;
  const path = location.pathname.replace(/^\/console\/?/, "").replace(/\/$/, "");
  const q = new URLSearchParams(location.search);
  const [page, ...rest] = path.split("/");
  for (const a of nav.querySelectorAll("a")) {
    if (a.getAttribute("href") === BASE + "/" + (page || "runs")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  let id;
  try {
    id = rest.length ? decodeURIComponent(rest.join("/")) : "";
  } catch {
    return notFound("Page " + path); // a malformed percent-escape names nothing
  }
  try {
    switch (page) {
      case "":
      case "runs": return await (id ? runPage(id) : runsPage(q));
      case "subscribers": return await (id ? subscriberPage(id) : subscribersPage());
      case "topics": return await topicsPage();
      case "workflows": return await workflowsPage();
      case "deliveries": return await deliveriesPage(q);
      case "webhooks": return await webhooksPage();
      case "tail": return tailPage();
      default: return notFound("Page " + path);
    }
  } catch (e) {
    show("Error", failure(e));
  }
}

document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a");
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
  ev.preventDefault();
  history.pushState(null, "", url.pathname + url.search);
  render();
});
window.addEventListener("popstate", render);
document.getElementById("signout").addEventListener("click", signOut);
render();
