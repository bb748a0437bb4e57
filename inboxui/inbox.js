// <herald-inbox api-url="https://herald.example.com" token="hit_…">
//
// Herald's in-app inbox as a web component: a bell with the unread count;
// a click opens the list of messages; clicking a message marks it read
// (and follows its primary action, if any); "Mark all read" and each
// message's "Archive" do what they say. New messages and counts arrive
// live over Server-Sent Events. No dependency; styles live in the shadow
// DOM and can be adjusted through CSS custom properties:
// --herald-inbox-accent, --herald-inbox-width, --herald-inbox-font.
//
// Attributes: api-url (the Herald base URL; default: this page's origin),
// token (an inbox token minted by your back-end; required), open (the
// panel starts open). Events, on the element: herald-inbox-message (a new
// message, as detail), herald-inbox-counts ({unread, unseen}),
// herald-inbox-error ({status, code, message}).
(() => {
  "use strict";
  if (customElements.get("herald-inbox")) return;

  const STYLE = `
    :host { display: inline-block; position: relative; font: 14px/1.4 var(--herald-inbox-font, system-ui, sans-serif); color: #1f2328; }
    button { font: inherit; cursor: pointer; }
    .bell { position: relative; border: 0; background: transparent; padding: 6px; border-radius: 8px; line-height: 0; }
    .bell:hover { background: #f0f2f5; }
    .bell svg { width: 24px; height: 24px; }
    .badge { position: absolute; top: 0; right: 0; min-width: 18px; height: 18px; padding: 0 5px; box-sizing: border-box;
      border-radius: 9px; background: var(--herald-inbox-accent, #d1242f); color: #fff; font-size: 11px; font-weight: 600;
      line-height: 18px; text-align: center; }
    .badge[hidden] { display: none; }
    .panel { position: absolute; right: 0; top: 40px; width: var(--herald-inbox-width, 360px); max-height: 480px; display: flex;
      flex-direction: column; background: #fff; border: 1px solid #d0d7de; border-radius: 10px; box-shadow: 0 8px 24px rgba(0,0,0,.12); z-index: 1000; }
    .panel[hidden] { display: none; }
    header { display: flex; align-items: center; justify-content: space-between; padding: 10px 12px; border-bottom: 1px solid #eaeef2; }
    header strong { font-size: 15px; }
    .link { border: 0; background: none; color: var(--herald-inbox-accent, #0969da); padding: 2px 4px; }
    .link:disabled { color: #8c959f; cursor: default; }
    ul { list-style: none; margin: 0; padding: 0; overflow-y: auto; }
    li.item { display: flex; gap: 8px; padding: 10px 12px; border-bottom: 1px solid #f0f2f5; cursor: pointer; }
    li.item:hover { background: #f6f8fa; }
    li.item .dot { flex: none; width: 8px; height: 8px; margin-top: 6px; border-radius: 4px; background: transparent; }
    li.item.unread .dot { background: var(--herald-inbox-accent, #0969da); }
    li.item .text { flex: 1; min-width: 0; }
    li.item .subject { font-weight: 400; }
    li.item.unread .subject { font-weight: 600; }
    li.item .body { color: #424a53; overflow-wrap: anywhere; }
    li.item .meta { display: flex; gap: 8px; align-items: center; margin-top: 4px; color: #6e7781; font-size: 12px; }
    li.item .action { color: var(--herald-inbox-accent, #0969da); text-decoration: none; }
    .empty, .status { padding: 24px 12px; color: #6e7781; text-align: center; }
    .status:empty { display: none; }
    .more { margin: 8px auto; }
  `;
  const BELL = '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M18 8a6 6 0 0 0-12 0c0 7-3 9-3 9h18s-3-2-3-9"/><path d="M13.73 21a2 2 0 0 1-3.46 0"/></svg>';

  class HeraldInbox extends HTMLElement {
    static get observedAttributes() { return ["api-url", "token"]; }

    constructor() {
      super();
      this._messages = [];      // shown messages, newest first
      this._next = null;        // cursor of the next page
      this._counts = { unread: 0, unseen: 0 };
      this._source = null;      // the EventSource
      this._retry = 1000;       // backoff of a refused stream
      this._timer = 0;
      this._generation = 0;     // bumped at each (re)start: late answers of an old one are dropped
      this._expired = false;    // the token was refused: no stream until a new one
      this._streamCounts = 0;   // counts events of the stream handled so far
      const root = this.attachShadow({ mode: "open" });
      root.innerHTML = `<style>${STYLE}</style>
        <button class="bell" id="bell" part="bell" aria-label="Notifications" aria-haspopup="true" aria-expanded="false">${BELL}<span class="badge" id="badge" part="badge" hidden></span></button>
        <section class="panel" id="panel" part="panel" hidden>
          <header><strong>Notifications</strong><button class="link" id="mark-all" part="mark-all">Mark all read</button></header>
          <div class="status" id="status" role="status"></div>
          <ul id="list" part="list"></ul>
          <button class="link more" id="more" hidden>Load more</button>
        </section>`;
      this._el = (id) => root.getElementById(id);
      this._el("bell").addEventListener("click", () => this.toggle());
      this._el("mark-all").addEventListener("click", () => this.markAllRead());
      this._el("more").addEventListener("click", () => this._load(true));
    }

    connectedCallback() {
      if (this.hasAttribute("open")) this.toggle(true);
      this._start();
    }

    disconnectedCallback() { this._stop(); }

    attributeChangedCallback(name, oldValue, newValue) {
      if (oldValue !== newValue && this.isConnected) { this._stop(); this._start(); }
    }

    get apiUrl() { return (this.getAttribute("api-url") || location.origin).replace(/\/+$/, ""); }
    get token() { return this.getAttribute("token") || ""; }
    get counts() { return { ...this._counts }; }

    /** Opens or closes the panel (open: force a state). */
    toggle(open) {
      const panel = this._el("panel");
      const show = open === undefined ? panel.hidden : open;
      panel.hidden = !show;
      this._el("bell").setAttribute("aria-expanded", String(show));
    }

    /** Marks every unread message read. */
    async markAllRead() {
      const button = this._el("mark-all");
      button.disabled = true;
      try {
        await this._call("POST", "/v1/inbox/read-all");
        const now = new Date().toISOString();
        for (const m of this._messages) if (!m.readAt) { m.readAt = now; m.seenAt = m.seenAt || now; }
        this._renderList();
        await this._refreshCounts();
      } catch (e) { this._fail(e); } finally { button.disabled = false; }
    }

    /** Marks one message read, unread, seen, archive(d) or unarchive(d). */
    async mark(messageId, action) {
      try {
        const m = await this._call("POST", `/v1/inbox/messages/${encodeURIComponent(messageId)}/${action}`);
        this._upsert(m);
        this._renderList();
        await this._refreshCounts();
        return m;
      } catch (e) { this._fail(e); }
    }

    _start() {
      const gen = ++this._generation;
      this._messages = [];
      this._next = null;
      this._renderList();
      if (!this.token) { this._status("No inbox token."); return; }
      this._status("Loading…");
      this._expired = false;
      this._load(false, gen).then(() => this._refreshCounts(gen)).then(() => this._connectIfLive(gen));
    }

    _stop() {
      this._generation++;
      clearTimeout(this._timer);
      if (this._source) { this._source.close(); this._source = null; }
    }

    async _load(more, gen = this._generation) {
      const q = more && this._next ? `&cursor=${encodeURIComponent(this._next)}` : "";
      try {
        const page = await this._call("GET", `/v1/inbox/messages?filter=all&limit=30${q}`);
        if (gen !== this._generation) return;
        if (!more) this._messages = [];
        for (const m of page.data) this._upsert(m, true);
        this._next = page.nextCursor;
        this._status("");
        this._renderList();
      } catch (e) { if (gen === this._generation) this._fail(e); }
    }

    // _refreshCounts asks for the counts. The answer and the stream come
    // over different connections, in no set order: an answer is dropped
    // if the stream brought counts while it was awaited, as it may be
    // older than them. Nothing is lost: the stream sends counts after
    // every change, so its last ones are the newest.
    async _refreshCounts(gen = this._generation) {
      const seen = this._streamCounts;
      try {
        const c = await this._call("GET", "/v1/inbox/counts");
        if (gen === this._generation && seen === this._streamCounts) this._setCounts(c);
      } catch (e) { if (gen === this._generation) this._fail(e); }
    }

    // _connect opens the stream. The browser reconnects it by itself
    // after a network error or the end of the stream, sending the last
    // event id, and the server resumes after it. A refused stream (401,
    // 429, a server restarting) is opened again here with a backoff,
    // after reloading the list: a new EventSource has no last id.
    _connect(gen) {
      const url = `${this.apiUrl}/v1/inbox/stream?token=${encodeURIComponent(this.token)}`;
      const source = new EventSource(url);
      this._source = source;
      source.addEventListener("open", () => { this._retry = 1000; });
      source.addEventListener("message", (e) => {
        const m = JSON.parse(e.data);
        if (m.archivedAt) return;
        const isNew = this._upsert(m);
        this._renderList();
        if (isNew) this.dispatchEvent(new CustomEvent("herald-inbox-message", { detail: m }));
      });
      source.addEventListener("counts", (e) => { this._streamCounts++; this._setCounts(JSON.parse(e.data)); });
      source.addEventListener("error", () => {
        if (source.readyState !== EventSource.CLOSED || gen !== this._generation) return;
        source.close();
        this._timer = setTimeout(() => {
          if (gen !== this._generation) return;
          this._load(false, gen).then(() => this._refreshCounts(gen)).then(() => this._connectIfLive(gen));
        }, this._retry);
        this._retry = Math.min(this._retry * 2, 60000);
      });
    }

    // _connectIfLive opens the stream unless the start was superseded or
    // the token was refused (a new token restarts the element).
    _connectIfLive(gen) {
      if (gen === this._generation && !this._expired) this._connect(gen);
    }

    async _call(method, path) {
      const res = await fetch(this.apiUrl + path, {
        method,
        headers: { Authorization: `Bearer ${this.token}`, Accept: "application/json" },
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) {
        const err = (body && body.error) || {};
        throw { status: res.status, code: err.code || "http_" + res.status, message: err.message || res.statusText };
      }
      return body;
    }

    _fail(e) {
      const detail = e && e.status ? e : { status: 0, code: "network", message: String(e && e.message || e) };
      this._expired = detail.status === 401;
      this._status(this._expired ? "This inbox link has expired." : "Notifications are unavailable right now.");
      this.dispatchEvent(new CustomEvent("herald-inbox-error", { detail }));
    }

    // _upsert puts m in the list in its place (newest first) and reports
    // whether it was new. at end: appended (a later page).
    _upsert(m, atEnd) {
      const i = this._messages.findIndex((x) => x.messageId === m.messageId);
      if (m.archivedAt) { if (i >= 0) this._messages.splice(i, 1); return false; }
      if (i >= 0) { this._messages[i] = m; return false; }
      if (atEnd) this._messages.push(m);
      else {
        let j = 0;
        while (j < this._messages.length && this._messages[j].createdAt > m.createdAt) j++;
        this._messages.splice(j, 0, m);
      }
      return true;
    }

    _setCounts(c) {
      this._counts = { unread: c.unread, unseen: c.unseen };
      const badge = this._el("badge");
      badge.textContent = c.unread > 99 ? "99+" : String(c.unread);
      badge.hidden = c.unread === 0;
      this._el("bell").setAttribute("aria-label", c.unread ? `Notifications, ${c.unread} unread` : "Notifications");
      this.dispatchEvent(new CustomEvent("herald-inbox-counts", { detail: this.counts }));
    }

    _status(text) { this._el("status").textContent = text; }

    _renderList() {
      const list = this._el("list");
      list.replaceChildren();
      if (this._messages.length === 0) {
        const li = document.createElement("li");
        li.className = "empty";
        li.textContent = "No notifications";
        list.append(li);
      }
      for (const m of this._messages) list.append(this._item(m));
      this._el("more").hidden = !this._next;
    }

    // _item renders one message. Message text is set as text, never as
    // HTML; an action URL other than http(s) is not linked.
    _item(m) {
      const li = document.createElement("li");
      li.className = "item" + (m.readAt ? "" : " unread");
      li.dataset.id = m.messageId;
      li.setAttribute("part", "item");
      const dot = document.createElement("span");
      dot.className = "dot";
      const text = document.createElement("div");
      text.className = "text";
      if (m.subject) {
        const s = document.createElement("div");
        s.className = "subject";
        s.textContent = m.subject;
        text.append(s);
      }
      const body = document.createElement("div");
      body.className = "body";
      body.textContent = m.body;
      const meta = document.createElement("div");
      meta.className = "meta";
      const when = document.createElement("time");
      when.dateTime = m.createdAt;
      when.textContent = new Date(m.createdAt).toLocaleString();
      meta.append(when);
      const action = m.primaryAction;
      if (action && /^https?:\/\//i.test(action.url || "")) {
        const a = document.createElement("a");
        a.className = "action";
        a.href = action.url;
        a.target = "_blank";
        a.rel = "noopener noreferrer";
        a.textContent = action.label || "Open";
        a.addEventListener("click", (e) => { e.stopPropagation(); if (!m.readAt) this.mark(m.messageId, "read"); });
        meta.append(a);
      }
      const archive = document.createElement("button");
      archive.className = "link archive";
      archive.textContent = "Archive";
      archive.addEventListener("click", (e) => { e.stopPropagation(); this.mark(m.messageId, "archive"); });
      meta.append(archive);
      text.append(body, meta);
      li.append(dot, text);
      li.addEventListener("click", () => { if (!m.readAt) this.mark(m.messageId, "read"); });
      return li;
    }
  }

  customElements.define("herald-inbox", HeraldInbox);
})();
