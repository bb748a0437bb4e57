// The widgets: an element builder that writes every value as text, never
// as markup, and the pieces every page is built of (links, status pills,
// times with their zone, ids with a copy button, tables that become
// cards on a phone, paged lists).

import { api } from "./api.js";
import { BASE } from "./route.js";

export const main = document.getElementById("main");
export const enc = encodeURIComponent;

// h builds an element: attrs (with on* handlers), then children (nodes,
// strings, numbers; null and false are skipped).
export function h(tag, attrs, ...children) {
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

export const link = (path, ...text) => h("a", { href: BASE + path }, ...text);
export const status = (s) => h("span", { class: "status " + s }, s);
export const json = (v) => h("pre", {}, JSON.stringify(v, null, 2));

const UTC = "herald.utc";
export const inUTC = () => localStorage.getItem(UTC) === "1";
export function setUTC(on) {
  if (on) localStorage.setItem(UTC, "1");
  else localStorage.removeItem(UTC);
}

// timeText is t as text in the browser's zone (or UTC), its zone named.
export function timeText(t) {
  if (!t) return "";
  const d = new Date(t);
  if (isNaN(d)) return String(t);
  return new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit",
    minute: "2-digit", second: "2-digit", timeZoneName: "short", timeZone: inUTC() ? "UTC" : undefined }).format(d);
}

// retime writes every time on the page again, after the zone changed.
export function retime() {
  for (const t of document.querySelectorAll("time[datetime]")) t.textContent = timeText(t.dateTime);
}

// when is a <time> of t showing its zone, with the UTC instant as title.
export const when = (t) => (t ? h("time", { datetime: t, title: new Date(t).toISOString?.() || t }, timeText(t)) : "");

// duration says how long ms is, short: 850 ms, 12.3 s, 4 min 5 s, 2 h 3 min.
export function duration(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return "";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s";
  const m = Math.floor(ms / 60000);
  if (m < 60) return m + " min " + Math.round((ms % 60000) / 1000) + " s";
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return hrs + " h " + (m % 60) + " min";
  return Math.floor(hrs / 24) + " d " + (hrs % 24) + " h";
}

const SVG = "http://www.w3.org/2000/svg";
const shapes = {
  copy: [["rect", { x: 5, y: 5, width: 9, height: 9, rx: 1.5 }], ["path", { d: "M3 11V3.5A1.5 1.5 0 0 1 4.5 2H11" }]],
  // The channel kinds: an envelope, a phone, a speech bubble, a bell, an
  // inbox tray and three linked nodes.
  email: [["rect", { x: 1.5, y: 3.5, width: 13, height: 9, rx: 1.5 }], ["path", { d: "M2 4.5l6 4.5 6-4.5" }]],
  sms: [["rect", { x: 4.5, y: 1.5, width: 7, height: 13, rx: 1.5 }], ["path", { d: "M7 12.2h2" }]],
  chat: [["path", { d: "M2.5 3.5h11v7.5h-6l-3 2.5v-2.5h-2z" }], ["path", { d: "M5 6.5h6M5 8.5h4" }]],
  push: [["path", { d: "M4 11.5V7a4 4 0 0 1 8 0v4.5l1.2 1H2.8z" }], ["path", { d: "M6.5 14.2a1.6 1.6 0 0 0 3 0" }]],
  in_app: [["path", { d: "M1.8 9.5l2-6h8.4l2 6v3.5a.5.5 0 0 1-.5.5H2.3a.5.5 0 0 1-.5-.5z" }], ["path", { d: "M2 9.5h3.5l1 1.6h3l1-1.6H14" }]],
  webhook: [["circle", { cx: 8, cy: 3.8, r: 1.9 }], ["circle", { cx: 3.8, cy: 11.8, r: 1.9 }], ["circle", { cx: 12.2, cy: 11.8, r: 1.9 }],
    ["path", { d: "M7.1 5.5l-2.4 4.6M8.9 5.5l2.4 4.6M5.7 11.8h4.6" }]],
};

// icon is a small line drawing, drawn in the text's colour; label names
// it for a screen reader (without one it is decoration, hidden).
export function icon(name, label) {
  const svg = document.createElementNS(SVG, "svg");
  const attrs = { viewBox: "0 0 16 16", width: 14, height: 14, class: "icon" };
  Object.assign(attrs, label ? { role: "img", "aria-label": label } : { "aria-hidden": "true" });
  for (const [k, v] of Object.entries(attrs)) svg.setAttribute(k, v);
  if (label) {
    const title = document.createElementNS(SVG, "title");
    title.textContent = label;
    svg.append(title);
  }
  for (const [tag, attrs] of shapes[name]) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    svg.append(el);
  }
  return svg;
}

// wordy shows an id like order_shipped_with_tracking (or an address) so
// that a narrow column breaks it after an underscore, a hyphen, a dot or
// an @, never inside a word.
export const wordy = (id) => h("span", { class: "wordy" }, String(id || "").split(/(?<=[_.@-])/).flatMap((p, i) => (i ? [h("wbr"), p] : [p])));

export const kinds = ["email", "sms", "chat", "push", "in_app", "webhook"];

// kind shows a channel kind by its icon and name; bare, by its icon
// alone, named for a screen reader and in its tooltip.
export function kind(k, bare) {
  if (!kinds.includes(k)) return k || "";
  if (bare) return h("span", { class: "kind", "data-kind": k }, icon(k, k));
  return h("span", { class: "kind", "data-kind": k, title: k }, icon(k), k);
}

// shortId shows a long id by its head and tail, the whole id in its
// title, with a button that copies it; to links it.
export function shortId(id, to) {
  if (!id) return "";
  const short = id.length > 16 ? id.slice(0, 8) + "…" + id.slice(-4) : id;
  const text = h("code", { title: id }, h("span", { class: "vh" }, id), h("span", { "aria-hidden": "true" }, short));
  const copy = h("button", { type: "button", class: "copy", title: "Copy " + id, "aria-label": "Copy " + id }, icon("copy"));
  copy.addEventListener("click", async (ev) => {
    ev.preventDefault();
    let done = "copied";
    try {
      await navigator.clipboard.writeText(id);
    } catch {
      done = "not copied";
    }
    copy.dataset.done = done;
    copy.title = done;
    setTimeout(() => { delete copy.dataset.done; copy.title = "Copy " + id; }, 1500);
  });
  return h("span", { class: "id" }, to ? h("a", { href: BASE + to }, text) : text, copy);
}

// show replaces the page's content and moves the focus to its heading.
export function show(title, ...content) {
  const h1 = h("h1", { tabindex: "-1" }, title);
  main.replaceChildren(h1, ...content.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  document.title = (typeof title === "string" ? title : h1.textContent) + " · Herald console";
  h1.focus();
}

export function notFound(what) {
  show("Not found", h("p", {}, what + " was not found."), link("/runs", "Back to runs"));
}

export function failure(e) {
  return h("p", { class: "error", role: "alert" }, e.message + (e.code ? " (" + e.code + ")" : ""));
}

// row is a table row whose cells carry their column's name, which a
// phone shows beside each value when the table becomes cards.
// A header may be a node (a kind with its icon): its text is the label.
const label = (t) => (t instanceof Node ? t.textContent : t);
const row = (headers, cells, attrs) => h("tr", attrs || {}, cells.map((c, i) => h("td", { "data-label": label(headers[i]) }, h("div", { class: "cell" }, c))));
const head = (headers) => h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t instanceof Node ? t.cloneNode(true) : t))));
const none = (headers) => h("tr", { class: "none" }, h("td", { colspan: headers.length, class: "muted" }, "Nothing yet."));

export function table(headers, rows) {
  return h("div", { class: "table" }, h("table", {}, head(headers),
    h("tbody", {}, rows.length ? rows.map((r) => row(headers, r)) : none(headers))));
}

export function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// paged lists a paged route, with a button for the next page.
export function paged(path, headers, cells) {
  const body = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const box = h("div", {}, h("div", { class: "table" }, h("table", {}, head(headers), body)), more);
  let cursor = null;
  async function load(reset) {
    const sep = path.includes("?") ? "&" : "?";
    try {
      const page = await api(path + (cursor && !reset ? sep + "cursor=" + enc(cursor) : ""));
      if (reset) body.replaceChildren();
      for (const item of page.data) body.append(row(headers, cells(item)));
      if (!body.children.length) body.append(none(headers));
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

// confirmed is a button that asks before it acts: pressed, it is
// replaced by "Really …?" with yes and no.
export function confirmed(label, question, yesLabel, act, cls = "") {
  const box = h("span", { class: "confirm" });
  const b = h("button", { type: "button", class: cls }, label);
  b.addEventListener("click", () => {
    const yes = h("button", { type: "button", class: cls }, yesLabel);
    const no = h("button", { type: "button" }, "No");
    no.addEventListener("click", () => { box.replaceChildren(b); b.focus(); });
    yes.addEventListener("click", async () => {
      yes.disabled = true;
      try {
        await act();
      } finally {
        yes.disabled = false;
      }
    });
    box.replaceChildren(h("span", {}, question), yes, no);
    yes.focus();
  });
  box.append(b);
  return box;
}
