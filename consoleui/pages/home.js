// Home: the overview of a window (the last hour, day or week) from
// GET /v1/stats: totals, two charts (inline SVG, each with a title and a
// table for screen readers), deliveries by kind and outcome, latency and
// the workflows failing most.

import { api } from "../api.js";
import { go } from "../route.js";
import { enc, failure, h, inUTC, kind, link, show, table, timeText } from "../dom.js";

const windows = [["1h", "Last hour"], ["24h", "Last 24 hours"], ["7d", "Last 7 days"]];
const outcomes = ["sent", "delivered", "bounced", "complained", "failed", "skipped"];
const SVG = "http://www.w3.org/2000/svg";

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// chart draws stacked bars a bucket, one colour a series, with a title,
// a legend and the same figures as a table (visually hidden, shown on
// demand).
function chart(title, points, series, grouped = false) {
  const W = 600, H = 160, pad = 24;
  const max = Math.max(1, ...points.map((p) => grouped ? Math.max(...series.map(([key]) => p[key])) : series.reduce((n, [key]) => n + p[key], 0)));
  const bw = (W - pad) / Math.max(points.length, 1);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H + 18}`, class: "chart", role: "img", "aria-labelledby": "" });
  const id = "chart-" + title.replace(/\W+/g, "-").toLowerCase();
  svg.setAttribute("aria-labelledby", id);
  svg.append(s("title", { id }, title + ": " + series.map(([key, label]) => label + " " + points.reduce((n, p) => n + p[key], 0)).join(", ")));
  svg.append(s("line", { x1: pad, y1: H, x2: W, y2: H, class: "axis" }));
  svg.append(s("text", { x: pad - 4, y: 10, class: "tick", "text-anchor": "end" }, max));
  svg.append(s("text", { x: pad - 4, y: H, class: "tick", "text-anchor": "end" }, 0));
  points.forEach((p, i) => {
    let y = H;
    series.forEach(([key, label, cls], j) => {
      const v = p[key];
      if (!v) return;
      const hgt = (v / max) * (H - 8);
      const w = grouped ? bw / series.length : bw;
      const x = pad + i * bw + (grouped ? j * w : 0);
      y = grouped ? H - hgt : y - hgt;
      svg.append(s("rect", { x: x + 0.25, y, width: Math.max(w - 0.5, 0.5), height: hgt, class: "bar " + cls },
        s("title", {}, timeText(p.at) + ": " + label + " " + v)));
    });
  });
  const tick = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
    timeZone: inUTC() ? "UTC" : undefined });
  [[0, "start"], [Math.floor(points.length / 2), "middle"], [points.length - 1, "end"]].forEach(([i, anchor]) => {
    if (points[i]) {
      const x = pad + i * bw + (anchor === "end" ? bw : anchor === "middle" ? bw / 2 : 0);
      svg.append(s("text", { x, y: H + 14, class: "tick", "text-anchor": anchor }, tick.format(new Date(points[i].at))));
    }
  });
  const legend = h("p", { class: "legend" }, series.map(([, label, cls]) => h("span", { class: "key " + cls }, label)));
  const rows = points.filter((p) => series.some(([key]) => p[key])).map((p) => [timeText(p.at), ...series.map(([key]) => p[key])]);
  const tbl = table(["Bucket", ...series.map(([, label]) => label)], rows);
  tbl.classList.add("vh");
  const toggle = h("button", { type: "button", class: "small", "aria-expanded": "false" }, "Show as a table");
  toggle.addEventListener("click", () => {
    const open = tbl.classList.toggle("vh") === false;
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "Hide the table" : "Show as a table";
  });
  return h("figure", { class: "chart" }, h("figcaption", {}, title), svg, legend, toggle, tbl);
}

const figure = (label, value, name, cls = "") => h("div", { class: "figure " + cls }, h("div", { class: "value", "data-figure": name }, value), h("div", { class: "label" }, label));

export async function homePage(q) {
  const win = windows.some(([w]) => w === q.get("window")) ? q.get("window") : "1h";
  let st;
  try {
    st = await api("/v1/stats?window=" + win);
  } catch (e) {
    return show("Overview", failure(e));
  }
  const pick = h("div", { class: "actions", role: "group", "aria-label": "Window" }, windows.map(([w, label]) => {
    const b = h("button", { type: "button", "aria-pressed": String(w === win) }, label);
    b.addEventListener("click", () => go(w === "1h" ? "/" : "/?window=" + w));
    return b;
  }));
  const byOutcome = Object.fromEntries(outcomes.map((o) => [o, Object.values(st.deliveries).reduce((n, k) => n + (k[o] || 0), 0)]));
  const ms = (v) => (v === null || v === undefined ? "–" : v < 1000 ? "≤ " + v + " ms" : "≤ " + v / 1000 + " s");
  show("Overview", pick,
    h("p", { class: "muted" }, "From ", timeText(st.from), " to ", timeText(st.to), "."),
    h("h2", {}, "Runs"),
    h("div", { class: "figures" }, figure("started", st.runs.started, "runs.started"), figure("completed", st.runs.completed, "runs.completed", "good"),
      figure("failed", st.runs.failed, "runs.failed", st.runs.failed ? "bad" : ""), figure("cancelled", st.runs.cancelled, "runs.cancelled"),
      figure("trigger → first send, p50", ms(st.latencyMs.p50), "latency.p50"), figure("p99", ms(st.latencyMs.p99), "latency.p99")),
    chart("Runs per " + { "1h": "minute", "24h": "15 minutes", "7d": "hour" }[win], st.series,
      [["runsStarted", "started", "neutral"], ["runsCompleted", "completed", "good"], ["runsFailed", "failed", "bad"]], true),
    h("h2", {}, "Deliveries"),
    h("div", { class: "figures" }, outcomes.map((o) => figure(o, byOutcome[o], "deliveries." + o, o === "failed" || o === "bounced" || o === "complained" ? (byOutcome[o] ? "bad" : "") : o === "sent" || o === "delivered" ? "good" : ""))),
    chart("Deliveries per " + { "1h": "minute", "24h": "15 minutes", "7d": "hour" }[win], st.series,
      [["deliveriesSent", "sent", "good"], ["deliveriesFailed", "failed or bounced", "bad"]]),
    table(["Kind", ...outcomes], Object.entries(st.deliveries).map(([k, n]) => [kind(k), ...outcomes.map((o) => n[o] || 0)])),
    h("h2", {}, "Workflows failing most"),
    st.topFailing.length ? table(["Workflow", "Failed runs"], st.topFailing.map((w) => [link("/runs?status=failed&workflowId=" + enc(w.workflowId), w.workflowId), w.failed]))
      : h("p", { class: "muted" }, "No run failed in this window."));
}
