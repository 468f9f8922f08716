// Entry point: the session, the header, and a hash router over the pages (pages.ts).
//   #/?q=&sort=&dir=        services          #/service/NAME?type=&range=&to=&from=&version=&view=&fn=
//   #/issues?state=&service= issues           #/issue/ID?type=&window_s=&view=&fn=
//   #/compare/NAME?type=&base_from=&base_to=&cur_from=&cur_to=&base_version=&cur_version=&view=&fn=
//   #/signin                sign-in
// Keyboard: / focuses the page's first search box; Escape resets (flame.ts, common.ts).
import "./style.css";
import * as api from "./api";
import { errorBox } from "./common";
import { h, replace } from "./dom";
import { comparePage, issuePage } from "./pages/diff";
import { issuesPage } from "./pages/issues";
import { servicePage } from "./pages/service";
import { servicesPage } from "./pages/services";
import { signInPage } from "./pages/signin";

const app = document.getElementById("app")!;
const top = document.getElementById("top")!;

function header(): void {
  const s = api.currentSession();
  replace(top, h("nav", null,
    h("a", { href: "#/", class: "brand" }, "RootTrace"),
    s ? h("a", { href: "#/" }, "Services") : null,
    s ? h("a", { href: "#/issues" }, "Issues") : null,
    h("span", { class: "spacer" }),
    s ? h("span", { class: `scope ${s.scope}`, "data-testid": "scope" }, s.scope === "admin" ? "admin" : "read-only") : null,
    s ? h("button", { type: "button", onclick: async () => { await api.signOut().catch(() => undefined); route(); } }, "Sign out") : null));
}

function parse(): { parts: string[]; q: URLSearchParams } {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?", 2);
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), q: new URLSearchParams(query ?? "") };
}

let generation = 0;

async function route(): Promise<void> {
  const gen = ++generation;
  const { parts, q } = parse();
  let s = api.currentSession();
  if (!s) {
    try {
      s = await api.resume();
    } catch (e) {
      header();
      replace(app, errorBox(e, () => void route()));
      return;
    }
  }
  header();
  if (!s || parts[0] === "signin") {
    if (s) { location.hash = "#/"; return; }
    // Signing in returns to the address asked for (a deep link survives sign-in).
    signInPage(app, () => { if (parts[0] === "signin") location.hash = "#/"; else void route(); });
    return;
  }
  const base = parts.slice(0, 2).map(encodeURIComponent).join("/");
  const go = (n: URLSearchParams) => { location.hash = `#/${base}?${n.toString()}`; };
  replace(app, h("p", { class: "muted" }, "Loading…"));
  const view = h("div", { class: "view" });
  try {
    if (parts[0] === "service" && parts[1]) await servicePage(view, parts[1], q, go);
    else if (parts[0] === "issues") await issuesPage(view, q, go);
    else if (parts[0] === "issue" && parts[1]) await issuePage(view, parts[1], q, go);
    else if (parts[0] === "compare" && parts[1]) await comparePage(view, parts[1], q, go);
    else await servicesPage(view, q);
  } catch (e) {
    if (e instanceof api.ApiError && e.status === 401) {
      await api.signOut().catch(() => undefined);
      if (gen === generation) void route();
      return;
    }
    replace(view, errorBox(e, () => void route()));
  }
  if (gen === generation) {
    replace(app, view);
    app.dataset.ready = `${parts[0] ?? "services"}`;
  }
}

window.addEventListener("hashchange", () => void route());
document.addEventListener("keydown", (e) => {
  const t = e.target as HTMLElement | null;
  if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || (t && /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
  const box = document.querySelector<HTMLInputElement>("[data-search]");
  if (box) { e.preventDefault(); box.focus(); }
});
window.addEventListener("rt-signed-out", () => void route());
void route();
