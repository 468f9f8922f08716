// The diff views, led by their answer (DESIGN §6, §7): one issue (its window before and
// after it started) and an ad hoc compare (any two windows, or two versions). Both show the
// same page: a header (type badge, producers, windows, significance, data-quality warnings),
// then the ranked table beside the differential flame graph (one above the other on a narrow
// screen), then capacity in one line with its inputs behind a disclosure, then the timeline.

import * as api from "../api";
import { badge, errorBox, keepInUrl, producersLine, sampleBuckets, toggle, warnings } from "../common";
import { Child, h, notice, replace } from "../dom";
import { FlameView, diffFlame } from "../flameview";
import { View } from "../flametree";
import * as fmt from "../fmt";
import { Marker, timeline } from "../timeline";
import { capacityPanel } from "./capacity";
import { alertBox } from "./issues";
import { rankTable } from "./rank";
import { flameHash } from "./service";

const WINDOWS = [300, 600, 1800, 3600, 6 * 3600, 86400];
type Go = (p: URLSearchParams) => void;

function typeOf(svc: api.Service | undefined, q: URLSearchParams): { types: api.PType[]; type: api.PType } {
  const types = svc?.types.length ? svc.types : (["cpu"] as api.PType[]);
  const type = (types.includes(q.get("type") as api.PType) ? q.get("type") : types.includes("cpu") ? "cpu" : types[0]) as api.PType;
  return { types, type };
}

function typeTabs(types: api.PType[], type: api.PType, q: URLSearchParams, go: Go): HTMLElement {
  return h("div", { class: "tabs" }, ...types.map((t) => h("button", {
    type: "button", "aria-pressed": String(t === type), onclick: () => { const n = new URLSearchParams(q); n.set("type", t); go(n); },
  }, t === "cpu" ? "CPU" : "Wall clock")));
}

export async function issuePage(root: HTMLElement, id: string, q: URLSearchParams, go: Go): Promise<void> {
  const issue = await api.get<api.Issue>(`/api/v1/issues/${encodeURIComponent(id)}`);
  const svc = (await api.get<api.Service[]>("/api/v1/services")).find((s) => s.name === issue.service);
  const { types, type } = typeOf(svc, q);
  const head = h("div", { class: "issue-head" },
    h("h1", null, `#${issue.id} ${issue.title}`),
    h("p", null, "Service ", h("a", { href: `#/service/${encodeURIComponent(issue.service)}` }, issue.service), ` · started ${fmt.time(issue.started_at)}`,
      issue.ended_at ? ` · ended ${fmt.time(issue.ended_at)}` : " · open"), alertBox(issue));
  if (svc && !svc.profiling_enabled && !svc.types.length) {
    replace(root, head, notice("warn", "Profiling is off", "This service has no profiles: turn profiling on, wait for data, and come back."), toggle(svc));
    return;
  }
  let d: api.DiffAnswer;
  try {
    d = await api.get<api.DiffAnswer>(`/api/v1/issues/${encodeURIComponent(id)}/diff`, { type, window_s: q.get("window_s") ?? undefined });
  } catch (e) {
    replace(root, head, errorBox(e));
    return;
  }
  // The chosen length: the URL's, else the baseline's (the baseline is never cut short; the
  // answer's window_s is the current window's length, which uploads in flight can shorten).
  const baseLen = Math.round((Date.parse(d.baseline.to) - Date.parse(d.baseline.from)) / 1000);
  const asked = Math.round(Number(q.get("window_s")));
  const chosen = asked > 0 ? asked : baseLen;
  const winSel = h("select", { "aria-label": "window length", "data-testid": "window-select" },
    ...[...new Set([...WINDOWS, chosen])].sort((a, b) => a - b).map((w) => {
      const o = h("option", { value: w }, fmt.duration(w));
      o.selected = w === chosen;
      return o;
    }));
  winSel.addEventListener("change", () => { const n = new URLSearchParams(q); n.set("window_s", winSel.value); go(n); });
  const curLen = (Date.parse(d.current.to) - Date.parse(d.current.from)) / 1000;
  const cutShort = curLen < chosen - 0.5
    ? h("p", { class: "cut-short", "data-testid": "cut-short" },
      `Current window so far: ${fmt.span(curLen)} of ${fmt.duration(chosen)} — uploads still arriving (${fmt.time(d.current.from)} → ${fmt.time(d.current.to)}).`)
    : null;
  diffView(root, d, q, {
    head, controls: [typeTabs(types, type, q, go), h("label", null, "Window length ", winSel)], cutShort,
    markers: [{ at: Date.parse(issue.started_at), label: "issue start", kind: "issue" }],
  });
}

/** #/compare/NAME?type=&base_from=&base_to=&cur_from=&cur_to=[&base_version=&cur_version=] */
export async function comparePage(root: HTMLElement, service: string, q: URLSearchParams, go: Go): Promise<void> {
  const svc = (await api.get<api.Service[]>("/api/v1/services")).find((s) => s.name === service);
  const { types, type } = typeOf(svc, q);
  const bv = q.get("base_version") ?? "", cv = q.get("cur_version") ?? "";
  const head = h("div", { class: "issue-head" },
    h("h1", null, `Compare ${service}`, bv || cv ? `: version ${bv || "any"} → ${cv || "any"}` : ""),
    h("p", null, "Service ", h("a", { href: `#/service/${encodeURIComponent(service)}` }, service), " · an ad hoc comparison; the address holds it, to share."));
  const params: Record<string, string | undefined> = { service, type };
  for (const k of ["base_from", "base_to", "cur_from", "cur_to", "base_version", "cur_version"]) params[k] = q.get(k) || undefined;
  let d: api.DiffAnswer;
  try {
    d = await api.get<api.DiffAnswer>("/api/v1/diff", params);
  } catch (e) {
    replace(root, head, errorBox(e));
    return;
  }
  const swap = () => {
    const n = new URLSearchParams(q);
    for (const [a, b] of [["base_from", "cur_from"], ["base_to", "cur_to"], ["base_version", "cur_version"]]) {
      const x = q.get(a), y = q.get(b);
      if (y) n.set(a, y); else n.delete(a);
      if (x) n.set(b, x); else n.delete(b);
    }
    go(n);
  };
  diffView(root, d, q, {
    head, controls: [typeTabs(types, type, q, go), h("button", { type: "button", onclick: swap }, "Swap baseline and current")], markers: [],
    versions: [bv, cv],
  });
}

interface ViewParts {
  head: HTMLElement;
  controls: Child[];
  cutShort?: HTMLElement | null;
  markers: Marker[];
  versions?: [string, string];
}

function diffView(root: HTMLElement, d: api.DiffAnswer, q: URLSearchParams, v: ViewParts): void {
  const base = d.baseline, cur = d.current;
  const [bv, cv] = v.versions ?? ["", ""];
  const noBase = base.profiles === 0
    ? notice("warn", "No baseline data", `No profiles in the baseline window (${fmt.time(base.from)} to ${fmt.time(base.to)}): every function would look new. Profiling may have been off then — pick a shorter window, or compare later.`)
    : null;
  const win = (label: string, w: api.DiffWindow, version: string, testid: string) => h("span", { class: "window" },
    `${label} ${fmt.time(w.from)} → ${fmt.time(w.to)}${version ? ` (version ${version})` : ""} · ${w.profiles} profile${w.profiles === 1 ? "" : "s"} · `,
    h("a", { href: flameHash(d.service, d.type, w.from, w.to, version), "data-testid": testid }, "its flame graph"));
  let fv: FlameView | null = null;
  const rank = rankTable(d, { onRowHover: (n) => fv?.highlightName(n), onRowClick: (n) => fv?.focusOn(n) });
  const flameBox = h("div", { class: "panel flame-panel" });
  if (d.flamegraph.nodes.parent.length <= 1) replace(flameBox, notice("info", "No flame graph", "Neither window has samples."));
  else {
    fv = diffFlame(d, { view: (q.get("view") as View) || "top-down", fn: q.get("fn") },
      (s) => keepInUrl(q, { view: s.view === "top-down" ? null : s.view, fn: s.fn }), (n) => rank.highlight(n));
    replace(flameBox, d.flamegraph.truncated ? notice("info", "Pruned", "The smallest frames were pruned to the server's node budget.") : null, fv.el);
  }
  const tlBox = h("div", { class: "panel" }, h("p", { class: "muted" }, "Loading the timeline…"));
  replace(root, v.head,
    h("div", { class: "controls" }, ...v.controls),
    h("p", { class: "windows", "data-testid": "windows" }, win("baseline", base, bv, "base-flame"), h("br"), win("current", cur, cv, "cur-flame")),
    v.cutShort ?? null,
    h("div", { class: "answer-head" }, badge(d.type, d.type_note), producersLine(d.producers)),
    warnings(d.quality.warnings), noBase,
    d.significance_unavailable ? notice("info", "No significance test", d.significance_unavailable) : null,
    h("div", { class: "answer", "data-testid": "answer" },
      h("section", null, h("h2", null, "Functions ranked by growth of self share"), rank.el),
      h("section", null, h("h2", null, "Differential flame graph"), flameBox)),
    h("h2", null, "Capacity"), capacityPanel(d),
    h("h2", null, "Timeline"), tlBox);

  const from = Math.min(Date.parse(base.from), Date.parse(cur.from)), to = Math.max(Date.parse(base.to), Date.parse(cur.to));
  sampleBuckets(d.service, d.type, from, to, 30).then((buckets) => {
    const markers: Marker[] = [...d.deploys.map((x) => ({ at: Date.parse(x.at), label: x.version, kind: x.source })), ...v.markers];
    replace(tlBox, timeline({
      from, to, buckets, markers, unit: "samples",
      spans: [{ from: Date.parse(base.from), to: Date.parse(base.to), label: "baseline", kind: "baseline" },
        { from: Date.parse(cur.from), to: Date.parse(cur.to), label: "current", kind: "current" }],
    }), d.deploys.length ? h("p", { class: "muted" }, "Deploys are shown beside the change; nothing here says a deploy caused it.") : null);
  }).catch((e) => replace(tlBox, errorBox(e)));
}
