// Workflows: the tenant's last sync, with schedule, next tick, default
// channels and payload schema; a workflow's page triggers it, with a
// form built from its payload schema (JSON when it has none).

import { api } from "../api.js";
import { confirmed, enc, facts, failure, h, json, link, notFound, shortId, show, table, when } from "../dom.js";
import { controlsSection } from "./controls.js";
import { dryRunButton } from "./dryrun.js";

export async function workflowsPage() {
  let wf;
  try {
    wf = await api("/v1/workflows");
  } catch (e) {
    return show("Workflows", failure(e));
  }
  show("Workflows", table(["Workflow", "Name", "Schedule", "Next tick", "Critical", "Default channels"],
    wf.workflows.map((w) => [link("/workflows/" + enc(w.workflowId), h("code", {}, w.workflowId)),
      w.name ? [h("strong", {}, w.name), w.description ? h("p", { class: "muted" }, w.description) : null] : "",
      w.schedule || "", when(w.nextRunAt), w.critical ? "yes" : "no",
      w.preferences ? Object.entries(w.preferences.channels).map(([k, v]) => k + (v ? " on" : " off")).join(", ") : ""])));
}

// fieldsOf builds the inputs of an object schema, named by their path;
// read turns them back into the payload. It reports false for a schema
// it cannot draw (the page then asks for JSON).
function fieldsOf(schema, path = []) {
  if (!schema || schema.type !== "object" || typeof schema.properties !== "object") return false;
  const required = new Set(schema.required || []);
  const parts = [];
  const readers = [];
  for (const [name, p] of Object.entries(schema.properties)) {
    const id = "pl-" + [...path, name].join("-");
    const label = [...path, name].join(".") + (required.has(name) ? " *" : "");
    if (p && p.type === "object") {
      const inner = fieldsOf(p, [...path, name]);
      if (!inner) return false;
      parts.push(h("fieldset", {}, h("legend", {}, label), inner.parts));
      readers.push((out) => { const o = inner.read(); if (Object.keys(o).length) out[name] = o; });
      continue;
    }
    let input;
    if (p && Array.isArray(p.enum)) {
      input = h("select", { id, name: id }, required.has(name) ? null : h("option", { value: "" }, "—"),
        p.enum.map((v, i) => h("option", { value: String(i) }, JSON.stringify(v))));
      readers.push((out) => { if (input.value !== "") out[name] = p.enum[Number(input.value)]; });
    } else if (p && p.type === "boolean") {
      input = h("input", { id, name: id, type: "checkbox" });
      readers.push((out) => { out[name] = input.checked; });
    } else if (p && (p.type === "integer" || p.type === "number")) {
      input = h("input", { id, name: id, type: "number", step: p.type === "integer" ? "1" : "any", required: required.has(name) });
      readers.push((out) => { if (input.value !== "") out[name] = Number(input.value); });
    } else if (p && p.type === "string") {
      input = h("input", { id, name: id, required: required.has(name) });
      readers.push((out) => { if (input.value !== "" || required.has(name)) out[name] = input.value; });
    } else {
      return false;
    }
    parts.push(h("label", { for: id }, label, input, p.description ? h("span", { class: "hint" }, p.description) : null));
  }
  return { parts, read: () => { const out = {}; for (const r of readers) r(out); return out; } };
}

export async function workflowPage(id) {
  let wf;
  try {
    wf = await api("/v1/workflows");
  } catch (e) {
    return show("Workflow " + id, failure(e));
  }
  const w = wf.workflows.find((x) => x.workflowId === id);
  if (!w) return notFound("Workflow " + id);
  const fields = fieldsOf(w.payloadSchema);
  const raw = h("textarea", { id: "payloadJSON", name: "payload", rows: 6 }, "{}");
  const to = h("select", { id: "toKind", name: "toKind" }, h("option", { value: "subscriber" }, "a subscriber"), h("option", { value: "topics" }, "topics"));
  const target = h("input", { id: "toValue", name: "to", required: true, placeholder: "subscriber id" });
  to.addEventListener("change", () => { target.placeholder = to.value === "topics" ? "topic keys, comma-separated" : "subscriber id"; });
  const out = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "trigger" },
    h("div", { class: "row" }, h("label", { for: "toKind" }, "Send to", to), h("label", { for: "toValue" }, "Who", target)),
    fields ? h("fieldset", { class: "payload" }, h("legend", {}, "Payload"), fields.parts)
      : h("label", { for: "payloadJSON" }, "Payload (JSON)", raw));
  form.addEventListener("submit", (ev) => ev.preventDefault());
  // build is the trigger's body from the form, or null (said in out).
  const build = () => {
    if (!form.reportValidity()) return null;
    let payload;
    try {
      payload = fields ? fields.read() : JSON.parse(raw.value || "null");
    } catch (e) {
      out.replaceChildren(failure(new Error("the payload is not JSON: " + e.message)));
      return null;
    }
    const v = target.value.trim();
    return { workflowId: id, payload,
      to: to.value === "topics" ? { topics: v.split(",").map((t) => t.trim()).filter(Boolean) } : { subscriberId: v } };
  };
  form.append(h("div", { class: "actions" }, dryRunButton(build, out), confirmed("Trigger", "Really trigger " + id + "?", "Yes, trigger", async () => {
    const body = build();
    if (!body) return;
    try {
      const res = await api("/v1/events", { method: "POST", body });
      out.replaceChildren(h("p", { class: "note" }, "Triggered: ", res.runs && res.runs.length
        ? res.runs.map((r) => shortId(r.runId, "/runs/" + enc(r.runId))) : "transaction " + res.transactionId));
    } catch (e) {
      out.replaceChildren(failure(e));
    }
  })), out);
  show(["Workflow ", h("code", {}, id)],
    facts([["Name", w.name], ["Description", w.description], ["Schedule", w.schedule], ["Next tick", when(w.nextRunAt)],
      ["Critical", w.critical ? "yes" : "no"],
      ["Default channels", w.preferences ? Object.entries(w.preferences.channels).map(([k, v]) => k + (v ? " on" : " off")).join(", ") : null]]),
    h("h2", {}, "Trigger"), form, await controlsSection(id),
    h("p", {}, link("/runs?workflowId=" + enc(id), "Its runs")),
    w.payloadSchema ? [h("h2", {}, "Payload schema"), json(w.payloadSchema)] : null);
}
