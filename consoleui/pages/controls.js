// A workflow's step controls: the values teammates edit without a
// deploy, per locale, each step's form built from the schema its Bridge
// declared, beside a live preview of the step rendered with the unsaved
// values (an email's HTML in a sandboxed frame that runs no script);
// saving, deleting a locale's values and reverting to an old version,
// each confirmed, and the history of the changes with who made them.

import { api } from "../api.js";
import { onLeave } from "../route.js";
import { confirmed, enc, failure, h, json, table, when } from "../dom.js";

const DEFAULT = "default";

// inputOf builds the input of one control, holding value; read gives the
// value back in the schema's type (undefined when left empty).
function inputOf(id, p, value) {
  if (Array.isArray(p.enum)) {
    const input = h("select", { id, name: id }, p.enum.map((v, i) => h("option", { value: String(i), selected: JSON.stringify(v) === JSON.stringify(value) }, typeof v === "string" ? v : JSON.stringify(v))));
    return { input, read: () => p.enum[Number(input.value)] };
  }
  if (p.type === "boolean") {
    const input = h("input", { id, name: id, type: "checkbox", checked: value === true });
    return { input, read: () => input.checked };
  }
  if (p.type === "integer" || p.type === "number") {
    const input = h("input", { id, name: id, type: "number", step: p.type === "integer" ? "1" : "any", value: value ?? "",
      min: p.minimum, max: p.maximum });
    return { input, read: () => (input.value === "" ? undefined : Number(input.value)) };
  }
  if (p.type === "string") {
    const long = (p.maxLength || 0) > 200 || (typeof value === "string" && value.includes("\n"));
    const input = long ? h("textarea", { id, name: id, rows: 4 }, value ?? "")
      : h("input", { id, name: id, value: value ?? "", maxlength: p.maxLength });
    return { input, read: () => input.value };
  }
  // Any other shape is edited as JSON.
  const input = h("textarea", { id, name: id, rows: 3, class: "json" }, JSON.stringify(value ?? null, null, 2));
  return { input, read: () => JSON.parse(input.value) };
}

// inEffect is the value of control name of step in locale: stored in
// the locale, else in its language (fr for fr-CA), else in the default
// content, else the schema's default; from says where it came from.
function inEffect(values, locale, step, name, p) {
  const chain = [locale];
  if (locale.includes("-")) chain.push(locale.split("-")[0]);
  chain.push(DEFAULT);
  for (const l of chain) {
    const v = values[l] && values[l][step];
    if (v && Object.prototype.hasOwnProperty.call(v, name)) return { value: v[name], from: l };
  }
  return { value: p.default, from: "" };
}

const pick = (o, name) => Object.entries(o || {}).find(([k]) => k.toLowerCase() === name);

// previewOf shows a step's rendered content as it would look: a subject
// or title, the HTML in a sandboxed frame, the text, the rest as JSON.
function previewOf(res) {
  const c = res.step.content;
  if (!c || typeof c !== "object") return [h("p", { class: "muted" }, "The step renders no content."), json(c)];
  const parts = [h("p", { class: "muted" }, res.step.type + (res.step.channel ? " · " + res.step.channel : "") + " · locale " + (res.locale || DEFAULT))];
  const shown = new Set();
  for (const name of ["subject", "title"]) {
    const f = pick(c, name);
    if (f) { shown.add(f[0]); parts.push(h("p", { class: "pv-subject" }, h("span", { class: "muted" }, name === "subject" ? "Subject: " : "Title: "), h("strong", {}, String(f[1])))); }
  }
  const html = pick(c, "html");
  if (html && html[1]) {
    shown.add(html[0]);
    // No allow-* token: the frame runs no script, submits no form and
    // cannot reach the console.
    parts.push(h("iframe", { class: "pv-html", title: "The email's HTML", sandbox: "", srcdoc: String(html[1]) }));
  }
  for (const name of ["body", "text"]) {
    const f = pick(c, name);
    if (f) { shown.add(f[0]); parts.push(h("pre", { class: "pv-text" }, String(f[1]))); }
  }
  const rest = Object.fromEntries(Object.entries(c).filter(([k]) => !shown.has(k)));
  if (Object.keys(rest).length) parts.push(json(rest));
  return parts;
}

// controlsSection is the workflow's controls editor, or null when none
// of its steps declares controls.
export async function controlsSection(workflowId) {
  const base = "/v1/workflows/" + enc(workflowId) + "/controls";
  let ctl;
  try {
    ctl = await api(base);
  } catch (e) {
    return [h("h2", {}, "Controls"), failure(e)];
  }
  if (!Object.keys(ctl.schema || {}).length) return null;
  const box = h("section", { class: "controls", "aria-labelledby": "controls-title" });
  const msg = h("div", { "aria-live": "polite" });
  let locale = DEFAULT;
  const added = new Set();
  const timers = new Set();
  onLeave(() => { for (const t of timers) clearTimeout(t); });

  async function reload(note) {
    try {
      ctl = await api(base);
    } catch (e) {
      msg.replaceChildren(failure(e));
      return;
    }
    render();
    if (note) msg.replaceChildren(h("p", { class: "note" }, note));
  }

  function stepEditor(step, schema) {
    const props = (schema && schema.properties) || {};
    const inputs = [];
    const fields = Object.entries(props).map(([name, p]) => {
      const id = "ctl-" + step + "-" + name;
      const eff = inEffect(ctl.values, locale, step, name, p || {});
      const f = inputOf(id, p || {}, eff.value);
      inputs.push([name, f]);
      return h("label", { for: id }, name, f.input,
        h("span", { class: "hint" }, [p && p.description, eff.from === locale ? null : eff.from ? "from " + eff.from : "the default"].filter(Boolean).join(" · ")));
    });
    const read = () => {
      const out = {};
      for (const [name, f] of inputs) {
        const v = f.read();
        if (v !== undefined) out[name] = v;
      }
      return out;
    };
    const pane = h("div", { class: "preview", "aria-live": "polite", "aria-label": "Preview of " + step });
    const err = h("div", { "aria-live": "polite" });
    let seq = 0;
    async function preview() {
      const mine = ++seq;
      let values;
      try {
        values = read();
      } catch (e) {
        err.replaceChildren(failure(new Error("a value is not JSON: " + e.message)));
        return;
      }
      err.replaceChildren();
      const body = { stepId: step, controls: { [step]: values } };
      if (locale !== DEFAULT) body.locale = locale;
      pane.setAttribute("aria-busy", "true");
      try {
        const res = await api("/v1/workflows/" + enc(workflowId) + "/preview", { method: "POST", body });
        if (mine === seq) pane.replaceChildren(...previewOf(res));
      } catch (e) {
        if (mine === seq) pane.replaceChildren(failure(e));
      } finally {
        if (mine === seq) pane.removeAttribute("aria-busy");
      }
    }
    let timer = null;
    const soon = () => {
      clearTimeout(timer);
      timers.delete(timer);
      timer = setTimeout(preview, 500);
      timers.add(timer);
    };
    const form = h("form", { class: "ctl-form", "data-step": step }, h("fieldset", {}, h("legend", {}, h("code", {}, step)), fields));
    form.addEventListener("input", soon);
    form.addEventListener("change", soon);
    form.addEventListener("submit", (ev) => ev.preventDefault());
    const q = locale === DEFAULT ? "" : "?locale=" + enc(locale);
    const where = locale === DEFAULT ? "the default content" : locale;
    const stored = ctl.values[locale] && ctl.values[locale][step];
    const skipped = ctl.skipped && ctl.skipped[locale] && ctl.skipped[locale][step];
    form.append(...[
      skipped && skipped.length ? h("p", { class: "reason" }, "Runs skip these stored values, which the step's schema no longer takes: " + skipped.join(", ")) : null,
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: preview }, "Preview"),
        confirmed("Save", "Save " + step + "'s controls for " + where + "?", "Yes, save", async () => {
          if (!form.reportValidity()) return;
          let values;
          try {
            values = read();
          } catch (e) {
            return err.replaceChildren(failure(new Error("a value is not JSON: " + e.message)));
          }
          try {
            const v = await api(base + "/" + enc(step) + q, { method: "PUT", body: values });
            await reload("Saved " + step + " for " + where + " as version " + v.version + ".");
          } catch (e) {
            err.replaceChildren(failure(e));
          }
        }),
        stored ? confirmed("Delete " + (locale === DEFAULT ? "default" : locale) + " values", "Delete " + step + "'s values for " + where + "? It falls back.", "Yes, delete", async () => {
          try {
            await api(base + "/" + enc(step) + q, { method: "DELETE" });
            await reload("Deleted " + step + "'s values for " + where + ".");
          } catch (e) {
            err.replaceChildren(failure(e));
          }
        }, "danger") : null),
      err].filter(Boolean));
    preview();
    return h("div", { class: "ctl-step", "data-step": step }, form, pane);
  }

  function render() {
    for (const t of timers) clearTimeout(t);
    timers.clear();
    const locales = [...new Set([DEFAULT, ...Object.keys(ctl.values || {}), ...added])];
    if (!locales.includes(locale)) locale = DEFAULT;
    const select = h("select", { id: "ctlLocale", name: "locale" }, locales.map((l) => h("option", { value: l, selected: l === locale }, l)));
    select.addEventListener("change", () => { locale = select.value; msg.replaceChildren(); render(); });
    const fresh = h("input", { id: "ctlNewLocale", name: "newLocale", placeholder: "fr, de-CH…", size: 8, pattern: "[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*" });
    const add = h("form", { class: "ctl-locales" }, h("label", { for: "ctlLocale" }, "Locale", select),
      h("label", { for: "ctlNewLocale" }, "Another locale", fresh), h("button", { type: "submit" }, "Add locale"));
    add.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const l = fresh.value.trim().replace(/_/g, "-");
      if (!l || !add.reportValidity()) return;
      added.add(l);
      locale = l;
      msg.replaceChildren(h("p", { class: "note" }, "Editing " + l + ": the values shown are those in effect until you save."));
      render();
    });
    const steps = Object.keys(ctl.schema).sort().map((s) => stepEditor(s, ctl.schema[s]));
    box.replaceChildren(h("h2", { id: "controls-title" }, "Controls"),
      h("p", { class: "muted" }, "Words your team edits without a deploy, per locale. Runs that start after a save use the new values; a started run keeps its own. Version " + ctl.version + "."),
      add, msg, ...steps, h("h3", {}, "History"), history);
    loadHistory();
  }

  const history = h("div");
  async function loadHistory() {
    try {
      const res = await api(base + "/history");
      history.replaceChildren(table(["Version", "Step", "Locale", "Values", "By", "At", ""], res.versions.slice(0, 50).map((v, i) => [
        String(v.version) + (v.revertedFrom ? " (revert of " + v.revertedFrom + ")" : ""), h("code", {}, v.stepId), v.locale,
        v.values ? h("code", { class: "values" }, JSON.stringify(v.values)) : h("span", { class: "muted" }, "deleted"),
        h("code", {}, v.actor), when(v.at),
        i === 0 || !v.values ? "" : confirmed("Revert", "Make version " + v.version + "'s values of " + v.stepId + " (" + v.locale + ") current again?", "Yes, revert", async () => {
          try {
            const nv = await api(base + "/" + enc(v.stepId) + "/revert", { method: "POST", body: { version: v.version } });
            await reload("Reverted " + v.stepId + " (" + v.locale + ") to version " + v.version + ", recorded as version " + nv.version + ".");
          } catch (e) {
            msg.replaceChildren(failure(e));
          }
        })])));
    } catch (e) {
      history.replaceChildren(failure(e));
    }
  }

  render();
  return box;
}
