// Where the console is: its base path, moving to a page, and what the
// current page must stop when the next one opens. The router (console.js)
// listens for the "herald:route" event that go sends.

export const BASE = "/console";

let leaving = [];

// go opens the console's page at path (below BASE).
export function go(path) {
  history.pushState(null, "", BASE + path);
  window.dispatchEvent(new Event("herald:route"));
}

// onLeave registers f to run when the current page is left.
export function onLeave(f) {
  leaving.push(f);
}

// leavePage runs what the page registered, once.
export function leavePage() {
  const fs = leaving;
  leaving = [];
  for (const f of fs) f();
}
