// The Herald console: every page rendered in the browser from the public
// REST API, with the tenant API key kept in this tab's sessionStorage.
// Plain ES modules, no dependency, no build step: api.js is the
// transport, dom.js the widgets, pages/ one module a page; this one
// routes by the URL.

import { signOut, signedIn } from "./api.js";
import { failure, inUTC, notFound, retime, setUTC, show } from "./dom.js";
import { BASE, leavePage } from "./route.js";
import { checkPage } from "./pages/check.js";
import { deliveriesPage } from "./pages/deliveries.js";
import { homePage } from "./pages/home.js";
import { runPage } from "./pages/run.js";
import { runsPage } from "./pages/runs.js";
import { signInPage } from "./pages/signin.js";
import { subscriberPage, subscribersPage } from "./pages/subscribers.js";
import { tailPage } from "./pages/tail.js";
import { topicsPage } from "./pages/topics.js";
import { transactionsPage } from "./pages/transactions.js";
import { webhooksPage } from "./pages/webhooks.js";
import { workflowPage, workflowsPage } from "./pages/workflows.js";

const nav = document.getElementById("nav");

async function render() {
  leavePage();
  if (!signedIn()) {
    nav.hidden = true;
    return signInPage(render);
  }
  nav.hidden = false;
  const path = location.pathname.replace(/^\/console\/?/, "").replace(/\/$/, "");
  const q = new URLSearchParams(location.search);
  const [page, ...rest] = path.split("/");
  for (const a of nav.querySelectorAll("a")) {
    if (a.getAttribute("href") === BASE + "/" + page) a.setAttribute("aria-current", "page");
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
      case "": return await homePage(q);
      case "runs": return await (id ? runPage(id, render) : runsPage(q));
      case "subscribers": return await (id ? subscriberPage(id) : subscribersPage());
      case "topics": return await topicsPage();
      case "workflows": return await (id ? workflowPage(id) : workflowsPage());
      case "deliveries": return await deliveriesPage(q);
      case "webhooks": return await webhooksPage(q, render);
      case "tail": return tailPage();
      case "transactions": return await transactionsPage();
      case "check": return await checkPage();
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
window.addEventListener("herald:route", render);
document.getElementById("signout").addEventListener("click", signOut);
const zone = document.getElementById("zone");
const showZone = () => zone.setAttribute("aria-pressed", String(inUTC()));
zone.addEventListener("click", () => {
  setUTC(!inUTC());
  showZone();
  retime();
});
showZone();
render();
