// Pieces shared by the pages: the type badge, error states, the profiling toggle, buckets.

import * as api from "./api";
import { h, notice, replace } from "./dom";

const NOTES: Record<api.PType, string> = {
  cpu: "excludes time spent waiting",
  wall: "includes time blocked on I/O and locks",
};

/** "CPU" or "Wall clock" with what that type cannot see (DESIGN §2). */
export function badge(type: api.PType, note?: string): HTMLElement {
  return h("span", { class: `badge ${type}`, "data-testid": "type-badge" },
    h("strong", null, type === "cpu" ? "CPU" : "Wall clock"), ` — ${note || NOTES[type]}`);
}

/** Who sampled the answer's profiles, beside the type badge (DESIGN §12): each agent with how
 * it samples, and where it declared another type than the one stored, that type and why. */
export function producersLine(producers?: api.Producer[]): HTMLElement | null {
  if (!producers || !producers.length) return null;
  return h("p", { class: "producers", "data-testid": "producers" }, "Sampled by ",
    ...producers.flatMap((p, i) => [i ? "; " : "", h("strong", null, p.agent),
      ` (${p.profiles} profile${p.profiles === 1 ? "" : "s"}): ${p.method}`,
      p.declared_type ? h("span", { class: "relabel", "data-testid": "relabel" },
        ` — declared ${p.declared_type}; ${p.note}`) : ""]));
}

/** An error as a box that says what to do. */
export function errorBox(e: unknown, retry?: () => void): HTMLElement {
  const again = retry ? h("button", { type: "button", onclick: retry }, "Retry") : null;
  if (e instanceof api.Unreachable)
    return notice("error", "Server unreachable",
      `The RootTrace server at ${location.origin} did not answer. Check that \`roottrace serve\` is running and reachable, then retry.`, again);
  if (e instanceof api.ApiError) {
    if (e.status === 401) return notice("error", "Signed out", "Your session ended (or its key was revoked). Sign in again.",
      h("a", { href: "#/signin" }, "Sign in"));
    if (e.status === 403) return notice("error", "Not allowed", `${e.message}. A read key sees everything and changes nothing; use an admin key to change settings.`);
    return notice("error", `Error ${e.status} (${e.code})`, e.message, again);
  }
  return notice("error", "Error", String(e), again);
}

/** The server ended the session (expired, signed out elsewhere, key revoked): forget it and
 * let the router show the sign-in page for the current address (signing in returns there). */
export function signedOut(): void {
  api.forget();
  window.dispatchEvent(new Event("rt-signed-out"));
}

/** What a failed change (PUT/POST) shows: a 401 goes to sign-in (returns null); an
 * unreachable server says what to do; other errors say what the API said. */
export function mutationError(e: unknown): HTMLElement | null {
  if (e instanceof api.ApiError && e.status === 401) {
    signedOut();
    return null;
  }
  if (e instanceof api.Unreachable)
    return h("span", { class: "mutation-error", role: "alert" }, h("strong", null, "Server unreachable: "),
      `nothing was changed. Check that \`roottrace serve\` is running at ${location.origin}, then try again.`);
  if (e instanceof api.ApiError && e.status === 403)
    return h("span", { class: "mutation-error", role: "alert" }, `Not allowed: ${e.message}. An admin key is needed to change this.`);
  if (e instanceof api.ApiError)
    return h("span", { class: "mutation-error", role: "alert" }, `Error ${e.status}: ${e.message}`);
  return h("span", { class: "mutation-error", role: "alert" }, `Unexpected error: ${e instanceof Error ? e.message : String(e)}`);
}

/** The per-service profiling switch: PUT /api/v1/services/{name}/profiling. Disabled for
 * read-only sessions. onChange receives the new state. */
export function toggle(svc: { name: string; profiling_enabled: boolean }, onChange?: (on: boolean) => void): HTMLElement {
  let on = svc.profiling_enabled;
  const readOnly = !api.canChange();
  const btn = h("button", {
    type: "button", role: "switch", class: "toggle", "aria-checked": String(on),
    "data-service": svc.name, "data-testid": "profiling-toggle", disabled: readOnly,
    title: readOnly ? "read-only session: an admin key is needed to change this" : "turn profiling on or off",
  });
  const msg = h("span", { class: "toggle-msg" });
  const paint = () => {
    btn.setAttribute("aria-checked", String(on));
    btn.textContent = on ? "Profiling on" : "Profiling off";
  };
  paint();
  btn.addEventListener("click", async () => {
    btn.disabled = true;
    msg.textContent = "";
    try {
      const r = await api.put<{ profiling_enabled: boolean }>(`/api/v1/services/${encodeURIComponent(svc.name)}/profiling`, { enabled: !on });
      on = r.profiling_enabled;
      paint();
      msg.textContent = on ? "SDKs pick this up within a second." : "SDKs stop profiling within a second.";
      onChange?.(on);
    } catch (e) {
      replace(msg, mutationError(e));
    } finally {
      btn.disabled = readOnly;
    }
  });
  return h("span", { class: "toggle-box" }, btn, readOnly ? h("span", { class: "muted" }, " read-only") : null, msg);
}

/** Profiled samples per bucket over [from, to) (ms since the epoch), n equal buckets: one
 * GET /api/v1/timeline. A bucket whose profiles carry no sample counts shows its value in s. */
export async function sampleBuckets(service: string, type: api.PType, from: number, to: number, n: number): Promise<{ from: number; to: number; value: number | null }[]> {
  const t = await api.get<api.TimelineAnswer>("/api/v1/timeline", {
    service, type, from: new Date(from).toISOString(), to: new Date(to).toISOString(), buckets: n,
  });
  return t.buckets.map((b) => ({ from: Date.parse(b.from), to: Date.parse(b.to), value: b.samples ?? b.value_ns / 1e9 }));
}

export function warnings(list: string[]): HTMLElement | null {
  if (!list.length) return null;
  const box = notice("warn", `Data quality: ${list.length === 1 ? "1 warning" : `${list.length} warnings`} — read before trusting the numbers`,
    h("ul", null, ...list.map((w) => h("li", null, w))));
  box.classList.add("quality-warnings");
  box.dataset.testid = "quality-warnings";
  return box;
}

/** Instance states as the services page counts them: stale first (no poll within its
 * interval's gap), then another agent's instance, then the state the SDK reported
 * (docs/control-plane.md: `<state>[: <reason>]`); waiting, error and not yet reported are
 * "other", so the counts of a service sum to its instances. */
export const STATES = ["profiling", "disabled", "unavailable", "declined", "stale", "foreign", "other"] as const;
export type State = (typeof STATES)[number];
export const STATE_LABEL: Record<State, string> = {
  profiling: "profiling", disabled: "disabled", unavailable: "unavailable", declined: "declined",
  stale: "stale", foreign: "foreign agent", other: "other",
};

export function stateOf(i: api.Instance): State {
  if (i.stale) return "stale";
  if (i.agent) return "foreign";
  const s = (i.status ?? "").split(":", 1)[0].trim();
  return (["profiling", "disabled", "unavailable", "declined"] as string[]).includes(s) ? (s as State) : "other";
}

export function stateCounts(list: api.Instance[]): Record<State, number> {
  const c = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<State, number>;
  for (const i of list) c[stateOf(i)]++;
  return c;
}

/** Writes a view's state into the address without reloading the page (a search as it is
 * typed, a sort, a selection), so that the address can be shared as it is. */
export function keepInUrl(q: URLSearchParams, set: Record<string, string | null | undefined>): void {
  for (const [k, v] of Object.entries(set)) if (v === null || v === undefined || v === "") q.delete(k); else q.set(k, v);
  const [path] = location.hash.split("?", 1);
  const s = q.toString();
  history.replaceState(history.state, "", `${path}${s ? `?${s}` : ""}`);
}

/** A search box that `/` focuses (main.ts) and Escape clears. */
export function searchBox(placeholder: string, value: string, onInput: (v: string) => void, testid?: string): HTMLInputElement {
  const el = h("input", { type: "search", placeholder: `${placeholder} (press /)`, class: "search", "aria-label": placeholder,
    "data-search": "", "data-testid": testid, value });
  el.addEventListener("input", () => onInput(el.value));
  el.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { el.value = ""; onInput(""); el.blur(); }
  });
  return el;
}
