// Sign in: a tenant API key, checked against the API, kept in this tab.

import { api, keep } from "../api.js";
import { failure, h, show } from "../dom.js";

export function signInPage(then) {
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
      keep(input.value);
      then();
    } catch (e) {
      msg.replaceChildren(failure(e));
    }
  });
  show("Sign in", h("p", { class: "muted" }, "Sign in with one of your tenant's API keys. It stays in this tab only."), form, msg);
  input.focus();
}
