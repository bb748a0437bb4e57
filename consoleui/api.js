// The transport: the REST API with the signed-in key, and the live tail
// (GET /v1/tail, Server-Sent Events read through fetch, since an
// EventSource cannot send a Bearer token).

import { onLeave } from "./route.js";

const KEY = "herald.apiKey";

export const signedIn = () => !!sessionStorage.getItem(KEY);

export function keep(key) {
  sessionStorage.setItem(KEY, key);
}

// signOut forgets the key and shows the sign-in form in place: signed in
// again, the person is back on the page they were on.
export function signOut() {
  sessionStorage.removeItem(KEY);
  window.dispatchEvent(new Event("herald:route"));
}

export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || "the API answered " + status);
    this.status = status;
    this.code = e.code || "";
  }
}

// api calls the REST API with the signed-in key (or opts.key). A 401 on
// the signed-in key signs out.
export async function api(path, opts = {}) {
  const headers = { Authorization: "Bearer " + (opts.key || sessionStorage.getItem(KEY) || "") };
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: opts.method || "GET", headers, signal: opts.signal,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    throw new APIError(res.status, { error: { message: "the API answered " + res.status + " with no JSON" } });
  }
  if (!res.ok) {
    if (res.status === 401 && !opts.key) signOut();
    throw new APIError(res.status, body);
  }
  return body;
}

// sseEvents splits a Server-Sent Events text stream into events: it
// yields {id, event, data} for each block with data, skipping comments.
export async function* sseEvents(reader) {
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, "\n");
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const ev = { id: "", event: "message", data: [] };
      for (const line of block.split("\n")) {
        if (line === "" || line.startsWith(":")) continue;
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        const val = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
        if (field === "data") ev.data.push(val);
        else if (field === "id") ev.id = val;
        else if (field === "event") ev.event = val;
      }
      if (ev.data.length) yield { id: ev.id, event: ev.event, data: ev.data.join("\n") };
    }
  }
}

// retryAfter is how long the tail waits before it opens the stream again.
export const retryAfter = 2000;

// tail follows GET /v1/tail until the page is left, calling onEvent with
// each event and onState with the stream's state as it changes:
// {state: "connecting"}, {state: "live"}, or {state: "broken", error,
// retryAt} when the stream failed or ended and will be opened again. A
// refused key (the server ends the tail when its key is revoked) signs
// out.
export function tail(onEvent, onState = () => {}) {
  const ctl = new AbortController();
  const report = (s) => {
    try {
      onState(s);
    } catch (e) {
      console.error("live tail: showing its state failed", e);
    }
  };
  onLeave(() => ctl.abort());
  (async () => {
    while (!ctl.signal.aborted) {
      let why;
      report({ state: "connecting" });
      try {
        const res = await fetch("/v1/tail", { headers: { Authorization: "Bearer " + sessionStorage.getItem(KEY) }, signal: ctl.signal });
        if (res.status === 401) return signOut(); // the key was revoked
        if (!res.ok) {
          let body = null;
          try { body = await res.json(); } catch { /* no JSON body */ }
          throw new APIError(res.status, body);
        }
        report({ state: "live" });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for await (const ev of sseEvents(reader)) {
          if (ev.event !== "event") continue;
          let parsed;
          try {
            parsed = JSON.parse(ev.data);
          } catch {
            throw new Error("the stream sent an event that is not JSON (#" + ev.id + ")");
          }
          onEvent(parsed);
        }
        why = new Error("the server ended the stream");
      } catch (e) {
        if (ctl.signal.aborted) return;
        why = e;
      }
      if (ctl.signal.aborted) return;
      report({ state: "broken", error: why, retryAt: Date.now() + retryAfter });
      await new Promise((r) => setTimeout(r, retryAfter));
    }
  })();
}
