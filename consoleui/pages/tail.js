// Live tail: the tenant's events as they are appended, with a pause
// button, and the stream's state in plain sight: live, connecting, or
// broken with the reason and when it is tried again.

import { retryAfter, tail } from "../api.js";
import { enc, h, link, show, when } from "../dom.js";

export function tailPage() {
  const list = h("ol", { class: "timeline", "aria-live": "off" });
  let paused = false;
  const pause = h("button", { type: "button", "aria-pressed": "false" }, "Pause");
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(paused));
  });
  const state = h("p", { class: "stream", role: "status", "data-state": "connecting" }, "Connecting…");
  show("Live tail", h("div", { class: "actions" }, pause, state), h("p", { class: "muted" }, "Your tenant's events as they are appended."), list);
  tail((ev) => {
    if (paused) return;
    const target = ev.aggregate === "run" ? link("/runs/" + enc(ev.id), ev.id)
      : ev.aggregate === "subscriber" ? link("/subscribers/" + enc(ev.id), ev.id) : ev.id;
    list.prepend(h("li", { class: "event" }, h("strong", {}, ev.type), " ", h("span", { class: "muted" }, ev.aggregate + " "), target,
      " ", h("span", { class: "muted" }, when(ev.at), " · #" + ev.seq)));
    while (list.children.length > 500) list.lastChild.remove();
  }, (s) => {
    // A retry keeps the break in sight until the stream is live again.
    if (s.state === "connecting" && state.dataset.state === "broken") return;
    state.dataset.state = s.state;
    if (s.state === "live") state.textContent = "● Live";
    else if (s.state === "connecting") state.textContent = "Connecting…";
    else {
      state.textContent = "Stream broken: " + s.error.message + (s.error.code ? " (" + s.error.code + ")" : "") +
        ". Trying again every " + retryAfter / 1000 + " s.";
    }
  });
}
