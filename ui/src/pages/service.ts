// One service: its flame graph over a window, the timeline of samples with its deploys and
// alert-opened issues, ad hoc compare (drag a range, then a second range or "the window
// before"; or two versions), and its instances. The address holds the view:
// #/service/NAME?type=&range=&to= (or &from=&to=), &version=, &view=&fn= (flame view).

import * as api from "../api";
import { STATES, STATE_LABEL, badge, errorBox, keepInUrl, mutationError, producersLine, sampleBuckets, searchBox, stateOf, toggle, warnings } from "../common";
import { h, notice, replace } from "../dom";
import { profileFlame } from "../flameview";
import { View } from "../flametree";
import * as fmt from "../fmt";
import { SortTable } from "../table";
import { Marker, timeline } from "../timeline";
import { usesText } from "./capacity";

const RANGES = [900, 3600, 6 * 3600, 86400, 7 * 86400];
const iso = (t: number) => new Date(t).toISOString().replace(/\.000Z$/, "Z");

/** The address of a diff between two windows of a service (the compare view). */
export function compareHash(service: string, type: api.PType, base: [number, number], cur: [number, number], versions?: [string, string]): string {
  const q = new URLSearchParams({ type, base_from: iso(base[0]), base_to: iso(base[1]), cur_from: iso(cur[0]), cur_to: iso(cur[1]) });
  if (versions) { q.set("base_version", versions[0]); q.set("cur_version", versions[1]); }
  return `#/compare/${encodeURIComponent(service)}?${q}`;
}

/** The address of one window's flame graph. */
export function flameHash(service: string, type: api.PType, from: string, to: string, version?: string | null): string {
  const q = new URLSearchParams({ type, from, to });
  if (version) q.set("version", version);
  return `#/service/${encodeURIComponent(service)}?${q}`;
}

export async function servicePage(root: HTMLElement, name: string, q: URLSearchParams, go: (p: URLSearchParams) => void): Promise<void> {
  const svc = (await api.get<api.Service[]>("/api/v1/services")).find((s) => s.name === name);
  if (!svc) {
    replace(root, notice("error", "No such service", `There is no service named “${name}”.`, h("a", { href: "#/" }, "Back to services")));
    return;
  }
  const head = h("div", { class: "page-head" }, h("h1", null, svc.name), toggle(svc, () => void servicePage(root, name, q, go)));
  if (!svc.types.length) {
    replace(root, head, svc.profiling_enabled
      ? notice("info", "No profiles yet", "Profiling is on; the first profiles arrive after the SDK's upload interval (60 s by default).")
      : notice("warn", "Profiling is off", "Turn it on with the toggle above: the service's SDKs start sampling within a second."), instancesPanel(svc));
    return;
  }
  const type = (svc.types.includes(q.get("type") as api.PType) ? q.get("type") : svc.types.includes("cpu") ? "cpu" : svc.types[0]) as api.PType;
  const lastUp = svc.last_upload ? Date.parse(svc.last_upload) : Date.now();
  const to = q.get("to") && !isNaN(Date.parse(q.get("to")!)) ? Date.parse(q.get("to")!) : Math.ceil(lastUp / 60000) * 60000;
  const explicitFrom = q.get("from") && !isNaN(Date.parse(q.get("from")!)) ? Date.parse(q.get("from")!) : null;
  const range = explicitFrom !== null && explicitFrom < to ? Math.round((to - explicitFrom) / 1000) : Number(q.get("range")) || 3600;
  const from = to - range * 1000;
  const version = q.get("version") ?? "";
  const set = (k: string, v: string) => { const n = new URLSearchParams(q); if (v) n.set(k, v); else n.delete(k); go(n); };
  const typeTabs = h("div", { class: "tabs" }, ...svc.types.map((t) => h("button", {
    type: "button", "aria-pressed": String(t === type), onclick: () => set("type", t),
  }, t === "cpu" ? "CPU" : "Wall clock")));
  const rangeSel = h("select", { "aria-label": "window length" }, ...[...new Set([...RANGES, range])].sort((a, b) => a - b).map((r) => {
    const o = h("option", { value: r }, `last ${fmt.duration(r)}`);
    o.selected = r === range;
    return o;
  }));
  rangeSel.addEventListener("change", () => { const n = new URLSearchParams(q); n.set("range", rangeSel.value); n.delete("from"); go(n); });
  const tlBox = h("div", { class: "panel" }, h("p", { class: "muted" }, "Loading the timeline…"));
  const flameBox = h("div", { class: "panel" }, h("p", { class: "muted" }, "Loading the flame graph…"));
  const off = !svc.profiling_enabled ? notice("warn", "Profiling is off", "Stored profiles are shown; new ones arrive only after you turn profiling on with the toggle.") : null;
  const badgeBox = h("div", null, badge(type));
  const versionsBox = h("span", { class: "versions" });
  replace(root, head, off,
    h("div", { class: "controls" }, typeTabs, rangeSel, ` ending ${fmt.time(to)}`, version ? h("span", { class: "tag", "data-testid": "version-filter" }, `version ${version}`) : null, versionsBox),
    badgeBox,
    h("h2", null, "Samples over time"), tlBox,
    h("h2", null, `Flame graph, ${fmt.time(from)} to ${fmt.time(to)}${version ? `, version ${version}` : ""}`), flameBox,
    instancesPanel(svc));

  const fromIso = new Date(from).toISOString(), toIso = new Date(to).toISOString();
  const prof = api.get<api.ProfileAnswer>("/api/v1/profile", { service: name, type, from: fromIso, to: toIso, version: version || undefined });
  const deploys = api.get<api.Deploy[]>("/api/v1/deploys", { service: name, from: new Date(to - 30 * 86400e3).toISOString(), to: toIso });
  prof.then((p) => {
    replace(badgeBox, badge(p.type, p.type_note), producersLine(p.producers));
    if (!p.profiles) {
      replace(flameBox, notice("info", "No profiles in this window", "Pick a longer window, or another type."));
      return;
    }
    const fv = profileFlame(p, { view: (q.get("view") as View) || "top-down", fn: q.get("fn") }, (s) => keepInUrl(q, { view: s.view === "top-down" ? null : s.view, fn: s.fn }));
    const cap = p.capacity
      ? h("p", { "data-testid": "capacity" }, `Capacity: ${fmt.vcpu(p.capacity.vcpu_hours_per_month)} vCPU-hours/month (730 h × ${fmt.num(p.capacity.inputs.cpu_s, 2)} CPU s / ${fmt.num(p.capacity.inputs.window_s)} s window, coverage ${p.capacity.inputs.coverage === null ? "—" : fmt.pct(100 * p.capacity.inputs.coverage, 0)})`)
      : h("p", { "data-testid": "capacity-unavailable" }, `No capacity figure: ${p.capacity_unavailable ?? "unavailable"}`);
    const agree = p.cpu_agreement?.warning
      ? notice("warn", `Sampled CPU vs OS CPU (${p.cpu_agreement.scope}): ratio ${p.cpu_agreement.ratio === null ? "—" : p.cpu_agreement.ratio.toFixed(2)}; ${usesText(p.cpu_agreement.capacity_uses)}`, p.cpu_agreement.warning) : null;
    replace(flameBox, warnings(p.quality.warnings), cap, agree, p.flamegraph.truncated ? notice("info", "Pruned", "The smallest frames were pruned to the server's 50,000-node budget.") : null, fv.el);
  }).catch((e) => replace(flameBox, errorBox(e)));

  // compare two versions over this window
  deploys.then((ds) => {
    const vs = [...new Set([...ds.map((d) => d.version), ...svc.instances.map((i) => i.version ?? "")].filter(Boolean))].sort();
    if (vs.length < 2) return;
    const sel = (label: string, pick: string) => {
      const s = h("select", { "aria-label": label, "data-testid": label.replace(/ /g, "-") }, ...vs.map((v) => { const o = h("option", { value: v }, v); o.selected = v === pick; return o; }));
      return s;
    };
    const a = sel("baseline version", vs[vs.length - 2]), b = sel("current version", vs[vs.length - 1]);
    replace(versionsBox, " · compare versions ", a, " → ", b, " ", h("button", {
      type: "button", "data-testid": "compare-versions",
      onclick: () => { location.hash = compareHash(name, type, [from, to], [from, to], [a.value, b.value]); },
    }, "Compare"));
  }).catch(() => undefined);

  const pickMsg = h("p", { class: "pick-msg", "data-testid": "selection" });
  const issues = api.get<api.Issue[]>("/api/v1/issues", { service: name }).catch(() => [] as api.Issue[]);
  Promise.all([sampleBuckets(name, type, from, to, 30), deploys, issues]).then(([buckets, ds, is]) => {
    const markers: Marker[] = ds.filter((d) => Date.parse(d.at) >= from).map((d) => ({ at: Date.parse(d.at), label: d.version, kind: d.source }));
    // issues that alerts opened, at their start (DESIGN §13)
    for (const i of is)
      if (i.alert && Date.parse(i.started_at) >= from && Date.parse(i.started_at) < to)
        markers.push({ at: Date.parse(i.started_at), label: `alert: ${i.title}`, kind: "issue" });
    const canIssue = api.canChange();
    // Ad hoc compare: the first drag selects the current window, a second drag the baseline.
    let cur: [number, number] | null = null;
    const round = (t: number) => Math.round(t / 1000) * 1000;
    const tl = timeline({
      from, to, buckets, markers, unit: "samples",
      pickHint: canIssue ? "click to investigate from here; drag to compare" : "drag to compare",
      onPick: canIssue ? (t) => void investigate(name, type, t, pickMsg) : undefined,
      onSelect: (a, b) => {
        if (!cur) {
          cur = [round(a), round(b)];
          tl.setSpans?.([{ from: cur[0], to: cur[1], label: "current", kind: "current" }]);
          const len = cur[1] - cur[0];
          replace(pickMsg, `Current window ${fmt.time(cur[0])} → ${fmt.time(cur[1])} (${fmt.span(len / 1000)}). Drag again to pick the baseline, or `,
            h("button", { type: "button", "data-testid": "compare-before", onclick: () => { location.hash = compareHash(name, type, [cur![0] - len, cur![0]], cur!); } }, "compare with the window before"),
            " ", h("button", { type: "button", onclick: () => { cur = null; tl.setSpans?.([]); replace(pickMsg); } }, "clear"));
        } else {
          location.hash = compareHash(name, type, [round(a), round(b)], cur);
        }
      },
    });
    replace(tlBox, tl, h("p", { class: "muted" }, canIssue ? "Click a point to open an issue starting there; drag across a range to compare it with another." : "Drag across a range to compare it with another. (Read-only session: an admin key can open issues here.)"), pickMsg);
  }).catch((e) => replace(tlBox, errorBox(e)));
}

async function investigate(service: string, type: api.PType, t: number, msg: HTMLElement): Promise<void> {
  const at = new Date(Math.round(t / 1000) * 1000).toISOString();
  replace(msg);
  try {
    const issue = await api.post<api.Issue>("/api/v1/issues", { service, title: `Investigate ${service} from ${fmt.time(at)}`, started_at: at });
    location.hash = `#/issue/${issue.id}?type=${type}`;
  } catch (e) {
    replace(msg, mutationError(e));
  }
}

/** The service's instances: searchable, sortable, 100 to a page. */
function instancesPanel(svc: api.Service): HTMLElement {
  if (!svc.instances.length) return h("div", null, h("h2", null, "Instances"), h("p", { class: "muted" }, "No instance has polled yet (profiles uploaded directly have none)."));
  const table = new SortTable<api.Instance>({
    rows: svc.instances, sort: { key: "instance", asc: true }, pageSize: 100, testid: "instances-table", class: "instances",
    rowAttrs: (i) => ({ class: i.stale ? "stale" : undefined, "data-state": stateOf(i) }),
    cols: [
      { key: "instance", label: "Instance", get: (i) => i.instance || "(unnamed)" },
      { key: "state", label: "State", get: (i) => STATE_LABEL[stateOf(i)] },
      { key: "status", label: "Status (as reported)", get: (i) => i.status ?? "not reported yet",
        cell: (i) => [i.status ?? "not reported yet", i.agent ? h("div", { class: "hint", "data-testid": "foreign-note" }, i.note ?? "") : null] },
      { key: "runtime", label: "Runtime", get: (i) => i.runtime },
      { key: "sdk", label: "SDK", get: (i) => i.sdk_version },
      { key: "version", label: "Service version", get: (i) => i.version },
      { key: "last_seen", label: "Last seen", get: (i) => i.last_seen, cell: (i) => `${fmt.time(i.last_seen)}${i.stale ? " (stale)" : ""}`, asc: false },
    ],
  });
  const counts = STATES.map((s) => [s, svc.instances.filter((i) => stateOf(i) === s).length] as const).filter(([, n]) => n);
  const search = searchBox("Search instances", "", (v) => {
    const n = v.trim().toLowerCase();
    table.setRows(n ? svc.instances.filter((i) => [i.instance, i.status, i.version, i.runtime].some((x) => (x ?? "").toLowerCase().includes(n))) : svc.instances);
  }, "instance-search");
  return h("div", { "data-testid": "instances" },
    h("h2", null, `Instances (${fmt.num(svc.instances.length)})`),
    h("p", { class: "fleet" }, counts.map(([s, n]) => `${fmt.num(n)} ${STATE_LABEL[s]}`).join(" · ")),
    h("div", { class: "controls" }, search), table.el);
}
