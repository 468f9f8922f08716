// The pages: sign-in, services, one service (flame graph + timeline), issues, one issue
// (ranked table, differential flame graph, timeline, capacity).

import * as api from "./api";
import { badge, errorBox, mutationError, producersLine, sampleBuckets, toggle, warnings } from "./common";
import { h, notice, replace } from "./dom";
import { FlameGraph, deltaColor, nameColor } from "./flame";
import * as fmt from "./fmt";
import { Marker, timeline } from "./timeline";

export type Params = URLSearchParams;

// ---- sign-in ----

export function signInPage(root: HTMLElement, onDone: () => void): void {
  const input = h("input", { type: "password", id: "token", name: "token", autocomplete: "off",
    placeholder: "rt_…", "aria-label": "API key", required: true });
  const msg = h("div", { class: "signin-msg" });
  const form = h("form", { class: "signin" },
    h("h1", null, "Sign in to RootTrace"),
    h("p", null, "Paste an admin or read key. The first start of the server printed the admin key (or it is ROOTTRACE_BOOTSTRAP_TOKEN; `make demo` prints it). A read key sees everything and changes nothing."),
    h("label", { for: "token" }, "Key"), input,
    h("button", { type: "submit" }, "Sign in"), msg);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(msg);
    try {
      await api.signIn(input.value.trim());
      onDone();
    } catch (err) {
      if (err instanceof api.ApiError && err.status === 401) replace(msg, notice("error", "Unknown key", "That key is unknown or revoked. Check it, or make one with `roottrace key create --scope read`."));
      else if (err instanceof api.ApiError && err.status === 403) replace(msg, notice("error", "Not a UI key", "Ingest keys upload profiles; sign in with an admin or read key."));
      else replace(msg, errorBox(err));
    }
  });
  replace(root, form);
  input.focus();
}

// ---- services ----

export async function servicesPage(root: HTMLElement): Promise<void> {
  const list = await api.get<api.Service[]>("/api/v1/services");
  if (!list.length) {
    replace(root, h("h1", null, "Services"), notice("info", "No services yet",
      "A service appears here when its SDK first asks for its config. To add one:",
      h("ol", null,
        h("li", null, "Make an ingest key: roottrace key create --scope ingest --service checkout"),
        h("li", null, `Node: rt = require('@roottrace/node'); rt.start({server: '${location.origin}', key, service: 'checkout', version})`),
        h("li", null, `Python: roottrace.start(server="${location.origin}", key=..., service="inventory", version=...)`),
        h("li", null, "Come back here and turn profiling on with the service's toggle: it is off until you do.")),
      "Profiles can also be uploaded directly: POST /api/v1/profiles or `roottrace ingest`."));
    return;
  }
  const cards = list.map((s) => {
    const inst = s.instances.length
      ? h("table", { class: "instances" },
        h("thead", null, h("tr", null, ...["Instance", "Runtime", "SDK", "Service version", "Status (as reported)", "Last seen"].map((t) => h("th", null, t)))),
        h("tbody", null, ...s.instances.map((i) => h("tr", { class: i.stale ? "stale" : undefined },
          h("td", null, i.instance || "(unnamed)"), h("td", null, i.runtime ?? "—"), h("td", null, i.sdk_version ?? "—"),
          h("td", null, i.version ?? "—"), h("td", null, i.status ?? "not reported yet",
            i.agent ? h("div", { class: "hint", "data-testid": "foreign-note" }, i.note ?? "") : null),
          h("td", null, fmt.time(i.last_seen), i.stale ? " (stale)" : "")))))
      : h("p", { class: "muted" }, "No instance has polled yet (profiles uploaded directly have none).");
    const off = h("p", { class: "hint", "data-testid": "profiling-hint" });
    const paintHint = (on: boolean) => {
      off.textContent = on
        ? "Profiling is on: its SDKs sample and upload (every 60 s by default)."
        : "Profiling is off (the default): its SDKs sample nothing until you turn it on.";
      off.classList.toggle("on", on);
    };
    paintHint(s.profiling_enabled);
    return h("section", { class: "card service", "data-service": s.name },
      h("div", { class: "card-head" },
        h("h2", null, h("a", { href: `#/service/${encodeURIComponent(s.name)}` }, s.name)),
        toggle(s, paintHint)),
      off,
      h("p", null, "Profile types: ", ...(s.types.length ? s.types.map((t) => badge(t)) : ["none stored yet"]),
        " · last upload: ", fmt.time(s.last_upload)),
      inst);
  });
  replace(root, h("h1", null, "Services"), ...cards);
}

// ---- one service ----

const RANGES = [900, 3600, 6 * 3600, 86400, 7 * 86400];

export async function servicePage(root: HTMLElement, name: string, q: Params, go: (p: Params) => void): Promise<void> {
  const svc = (await api.get<api.Service[]>("/api/v1/services")).find((s) => s.name === name);
  if (!svc) {
    replace(root, notice("error", "No such service", `There is no service named “${name}”.`, h("a", { href: "#/" }, "Back to services")));
    return;
  }
  const head = h("div", { class: "page-head" }, h("h1", null, svc.name), toggle(svc, () => void servicePage(root, name, q, go)));
  if (!svc.types.length) {
    replace(root, head, svc.profiling_enabled
      ? notice("info", "No profiles yet", "Profiling is on; the first profiles arrive after the SDK's upload interval (60 s by default).")
      : notice("warn", "Profiling is off", "Turn it on with the toggle above: the service's SDKs start sampling within a second."));
    return;
  }
  const type = (svc.types.includes(q.get("type") as api.PType) ? q.get("type") : svc.types.includes("cpu") ? "cpu" : svc.types[0]) as api.PType;
  const range = Number(q.get("range")) || 3600;
  const lastUp = svc.last_upload ? Date.parse(svc.last_upload) : Date.now();
  const to = q.get("to") ? Date.parse(q.get("to")!) : Math.ceil(lastUp / 60000) * 60000;
  const from = to - range * 1000;
  const typeTabs = h("div", { class: "tabs" }, ...svc.types.map((t) => h("button", {
    type: "button", "aria-pressed": String(t === type), onclick: () => { const n = new URLSearchParams(q); n.set("type", t); go(n); },
  }, t === "cpu" ? "CPU" : "Wall clock")));
  const rangeSel = h("select", { "aria-label": "window length" }, ...RANGES.map((r) => {
    const o = h("option", { value: r }, `last ${fmt.duration(r)}`);
    o.selected = r === range;
    return o;
  }));
  rangeSel.addEventListener("change", () => { const n = new URLSearchParams(q); n.set("range", rangeSel.value); go(n); });
  const tlBox = h("div", { class: "panel" }, h("p", { class: "muted" }, "Loading the timeline…"));
  const flameBox = h("div", { class: "panel" }, h("p", { class: "muted" }, "Loading the flame graph…"));
  const off = !svc.profiling_enabled ? notice("warn", "Profiling is off", "Stored profiles are shown; new ones arrive only after you turn profiling on with the toggle.") : null;
  const badgeBox = h("div", null, badge(type));
  replace(root, head, off, h("div", { class: "controls" }, typeTabs, rangeSel, " ending ", fmt.time(to)), badgeBox,
    h("h2", null, "Samples over time"), tlBox, h("h2", null, `Flame graph, ${fmt.time(from)} to ${fmt.time(to)}`), flameBox);

  const prof = api.get<api.ProfileAnswer>("/api/v1/profile", { service: name, type, from: new Date(from).toISOString(), to: new Date(to).toISOString(), limit: 20 });
  const deploys = api.get<api.Deploy[]>("/api/v1/deploys", { service: name, from: new Date(from).toISOString(), to: new Date(to).toISOString() });
  prof.then((p) => {
    replace(badgeBox, badge(p.type, p.type_note), producersLine(p.producers));
    const fg = p.flamegraph;
    if (!p.profiles) {
      replace(flameBox, notice("info", "No profiles in this window", "Pick a longer window, or another type."));
      return;
    }
    const total = fg.nodes.total_ns[0] || 1;
    const fgv = new FlameGraph({
      names: fg.names, parent: fg.nodes.parent, depth: fg.nodes.depth, name: fg.nodes.name, width: fg.nodes.total_ns,
      color: (i) => nameColor(fg.names[fg.nodes.name[i]]),
      describe: (i) => [fg.names[fg.nodes.name[i]],
        `total ${fmt.ns(fg.nodes.total_ns[i])} (${((100 * fg.nodes.total_ns[i]) / total).toFixed(2)}%)`,
        `self ${fmt.ns(fg.nodes.self_ns[i])} (${((100 * fg.nodes.self_ns[i]) / total).toFixed(2)}%)`,
        `samples ${fmt.count(fg.nodes.samples[i])}`],
    });
    const cap = p.capacity
      ? h("p", { "data-testid": "capacity" }, `Capacity: ${fmt.vcpu(p.capacity.vcpu_hours_per_month)} vCPU-hours/month (730 h × ${fmt.num(p.capacity.inputs.cpu_s, 2)} CPU s / ${fmt.num(p.capacity.inputs.window_s)} s window, coverage ${p.capacity.inputs.coverage === null ? "—" : fmt.pct(100 * p.capacity.inputs.coverage, 0)})`)
      : h("p", { "data-testid": "capacity-unavailable" }, `No capacity figure: ${p.capacity_unavailable ?? "unavailable"}`);
    const agree = p.cpu_agreement?.warning
      ? notice("warn", `Sampled CPU vs OS CPU (${p.cpu_agreement.scope}): ratio ${p.cpu_agreement.ratio === null ? "—" : p.cpu_agreement.ratio.toFixed(2)}; ${usesText(p.cpu_agreement.capacity_uses)}`, p.cpu_agreement.warning) : null;
    replace(flameBox, warnings(p.quality.warnings), cap, agree, fg.truncated ? notice("info", "Pruned", "The smallest frames were pruned to the server's 50,000-node budget.") : null, fgv.el);
  }).catch((e) => replace(flameBox, errorBox(e)));

  const pickMsg = h("p", { class: "pick-msg" });
  const issues = api.get<api.Issue[]>("/api/v1/issues", { service: name }).catch(() => [] as api.Issue[]);
  Promise.all([sampleBuckets(name, type, from, to, 30), deploys, issues]).then(([buckets, ds, is]) => {
    const markers: Marker[] = ds.map((d) => ({ at: Date.parse(d.at), label: d.version, kind: d.source }));
    // issues that alerts opened, at their start (DESIGN §13)
    for (const i of is)
      if (i.alert && Date.parse(i.started_at) >= from && Date.parse(i.started_at) < to)
        markers.push({ at: Date.parse(i.started_at), label: `alert: ${i.title}`, kind: "issue" });
    const canIssue = api.canChange();
    replace(tlBox, timeline({
      from, to, buckets, markers, unit: "samples",
      pickHint: canIssue ? "click to investigate from here" : undefined,
      onPick: canIssue ? (t) => void investigate(name, type, t, pickMsg) : undefined,
    }), h("p", { class: "muted" }, canIssue ? "Click a point to open an issue starting there (investigate from here)." : "Read-only session: an admin key can open issues from here."), pickMsg);
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

// ---- issues ----

/** Who opened an issue: by hand, or which alerting system (DESIGN §13). */
function openedBy(i: api.Issue): string {
  return i.source === "alertmanager" ? "Alertmanager alert" : i.source === "grafana" ? "Grafana alert" : "by hand";
}

export async function issuesPage(root: HTMLElement, q?: Params, go?: (p: Params) => void): Promise<void> {
  const state = q?.get("state") === "open" || q?.get("state") === "ended" ? q.get("state") as string : "";
  const list = await api.get<api.Issue[]>("/api/v1/issues", state ? { state } : undefined);
  const filter = h("div", { class: "tabs", "data-testid": "issue-state" }, ...[["", "All"], ["open", "Open"], ["ended", "Ended"]].map(([v, label]) =>
    h("button", { type: "button", "aria-pressed": String(v === state), onclick: () => go?.(new URLSearchParams(v ? { state: v } : {})) }, label)));
  if (!list.length) {
    replace(root, h("h1", null, "Issues"), filter, notice("info", state ? `No ${state} issues` : "No issues yet", "Open one from a service's timeline (click a point: investigate from here), POST /api/v1/issues or `roottrace issue create`; or let an alert open it (docs/alerts.md)."));
    return;
  }
  replace(root, h("h1", null, "Issues"), filter, h("table", { class: "issues" },
    h("thead", null, h("tr", null, ...["Issue", "Service", "Started", "Ended", "Opened"].map((t) => h("th", null, t)))),
    h("tbody", null, ...list.map((i) => h("tr", { "data-source": i.source ?? "api" },
      h("td", null, h("a", { href: `#/issue/${i.id}` }, `#${i.id} ${i.title}`)),
      h("td", null, h("a", { href: `#/service/${encodeURIComponent(i.service)}` }, i.service)),
      h("td", null, fmt.time(i.started_at)),
      h("td", null, i.ended_at ? fmt.time(i.ended_at) : "open"),
      h("td", { "data-testid": "opened-by" }, openedBy(i), i.alert ? ` (${i.alert.status})` : ""))))));
}

/** The alert that opened an issue: its status, labels, lead time and a link to where it
 * fired (its generatorURL: Prometheus' graph, Grafana's rule). */
function alertBox(i: api.Issue): HTMLElement | null {
  const a = i.alert;
  if (!a) return null;
  const lead = a.lead_s > 0 ? ` The issue starts ${fmt.span(a.lead_s)} before the alert's start (${a.lead_source === "annotation" ? "its roottrace_lead annotation" : "the server's --alert-lead"}).` : "";
  return h("div", { class: "notice info alert-box", "data-testid": "issue-alert" },
    h("strong", null, `${openedBy(i)} ${a.status}`), ` · fired ${fmt.time(a.starts_at)}`, i.ended_at ? ` · ended ${fmt.time(i.ended_at)}` : "",
    ` · ${a.notifications} notification${a.notifications === 1 ? "" : "s"}.${lead}`,
    h("div", { class: "labels" }, ...Object.entries(a.labels).map(([k, v]) => h("code", null, `${k}=${v}`))),
    a.generator_url && /^https?:\/\//.test(a.generator_url)
      ? h("a", { href: a.generator_url, target: "_blank", rel: "noopener noreferrer", "data-testid": "generator-url" }, "where it fired")
      : null);
}

// ---- one issue: the heart (DESIGN §6, §7) ----

const WINDOWS = [300, 600, 1800, 3600, 6 * 3600, 86400];

export async function issuePage(root: HTMLElement, id: string, q: Params, go: (p: Params) => void): Promise<void> {
  const issue = await api.get<api.Issue>(`/api/v1/issues/${encodeURIComponent(id)}`);
  const svc = (await api.get<api.Service[]>("/api/v1/services")).find((s) => s.name === issue.service);
  const types = svc?.types.length ? svc.types : (["cpu"] as api.PType[]);
  const type = (types.includes(q.get("type") as api.PType) ? q.get("type") : types.includes("cpu") ? "cpu" : types[0]) as api.PType;
  const head = h("div", { class: "page-head" },
    h("h1", null, `#${issue.id} ${issue.title}`),
    h("p", null, "Service ", h("a", { href: `#/service/${encodeURIComponent(issue.service)}` }, issue.service), ` · started ${fmt.time(issue.started_at)}`,
      issue.ended_at ? ` · ended ${fmt.time(issue.ended_at)}` : " · open"), alertBox(issue));
  if (svc && !svc.profiling_enabled && !svc.types.length) {
    replace(root, head, notice("warn", "Profiling is off", "This service has no profiles: turn profiling on, wait for data, and come back."), svc ? toggle(svc) : null);
    return;
  }
  let diff: api.DiffAnswer;
  try {
    diff = await api.get<api.DiffAnswer>(`/api/v1/issues/${encodeURIComponent(id)}/diff`, { type, window_s: q.get("window_s") ?? undefined });
  } catch (e) {
    replace(root, head, errorBox(e));
    return;
  }
  const typeTabs = h("div", { class: "tabs" }, ...types.map((t) => h("button", {
    type: "button", "aria-pressed": String(t === type), onclick: () => { const n = new URLSearchParams(q); n.set("type", t); go(n); },
  }, t === "cpu" ? "CPU" : "Wall clock")));
  // The chosen length: the URL's, else the baseline's (the baseline is never cut short; the
  // answer's window_s is the current window's length, which uploads in flight can shorten).
  const baseLen = Math.round((Date.parse(diff.baseline.to) - Date.parse(diff.baseline.from)) / 1000);
  const asked = Math.round(Number(q.get("window_s")));
  const chosen = asked > 0 ? asked : baseLen;
  const winSel = h("select", { "aria-label": "window length", "data-testid": "window-select" },
    ...[...new Set([...WINDOWS, chosen])].sort((a, b) => a - b).map((w) => {
      const o = h("option", { value: w }, fmt.duration(w));
      o.selected = w === chosen;
      return o;
    }));
  winSel.addEventListener("change", () => { const n = new URLSearchParams(q); n.set("window_s", winSel.value); go(n); });
  const base = diff.baseline, cur = diff.current;
  const noBase = base.profiles === 0
    ? notice("warn", "No baseline data", `No profiles in the baseline window (${fmt.time(base.from)} to ${fmt.time(base.to)}): every function would look new. Profiling may have been off then — pick a shorter window, or compare later.`)
    : null;
  const curLen = (Date.parse(cur.to) - Date.parse(cur.from)) / 1000;
  const cutShort = curLen < chosen - 0.5
    ? h("p", { class: "cut-short", "data-testid": "cut-short" },
      `Current window so far: ${fmt.span(curLen)} of ${fmt.duration(chosen)} — uploads still arriving (${fmt.time(cur.from)} → ${fmt.time(cur.to)}).`)
    : null;
  const tlBox = h("div", { class: "panel" }, h("p", { class: "muted" }, "Loading the timeline…"));
  replace(root, head,
    h("div", { class: "controls" }, typeTabs, h("label", null, "Window length ", winSel),
      ` baseline ${fmt.time(base.from)} → ${fmt.time(base.to)} · current ${fmt.time(cur.from)} → ${fmt.time(cur.to)}`),
    cutShort,
    badge(diff.type, diff.type_note), producersLine(diff.producers),
    warnings(diff.quality.warnings), noBase,
    diff.significance_unavailable ? notice("info", "No significance test", diff.significance_unavailable) : null,
    h("h2", null, "Timeline"), tlBox,
    h("h2", null, "Capacity"), capacityPanel(diff),
    h("h2", null, "Functions ranked by growth of self share"), rankTable(diff),
    h("h2", null, "Differential flame graph"), diffFlame(diff));

  const from = Date.parse(base.from), to = Date.parse(cur.to);
  sampleBuckets(diff.service, diff.type, from, to, 30).then((buckets) => {
    const markers: Marker[] = diff.deploys.map((d) => ({ at: Date.parse(d.at), label: d.version, kind: d.source }));
    markers.push({ at: Date.parse(issue.started_at), label: "issue start", kind: "issue" });
    replace(tlBox, timeline({
      from, to, buckets, markers, unit: "samples",
      spans: [{ from, to: Date.parse(base.to), label: "baseline", kind: "baseline" }, { from: Date.parse(cur.from), to, label: "current", kind: "current" }],
    }), diff.deploys.length ? h("p", { class: "muted" }, "Deploys are shown beside the change; nothing here says a deploy caused it.") : null);
  }).catch((e) => replace(tlBox, errorBox(e)));
}

/** Which figure the capacity took, in words (DESIGN §7). */
function usesText(uses: api.CpuAgreement["capacity_uses"]): string {
  return uses === "os" ? "capacity uses the OS's figure"
    : uses === "sampled" ? "capacity uses the sampled figure" : "capacity uses the OS's figure where the sampler ticks on wall time";
}

/** Sampled CPU against the CPU the OS accounted to what the profiles cover, per window. */
function agreement(d: api.DiffAnswer): HTMLElement | null {
  const a = d.cpu_agreement;
  if (!a || (!a.baseline && !a.current)) return null;
  const row = (label: string, x: api.CpuAgreement | null) => h("tr", null, h("th", null, label),
    x ? h("td", { class: "num", "data-testid": `agreement-ratio-${label}` }, x.ratio === null ? "—" : x.ratio.toFixed(2)) : h("td", null, "—"),
    x ? h("td", { class: "num" }, `${fmt.num(x.sampled_cpu_s, 3)} s`) : h("td", null, "—"),
    x ? h("td", { class: "num" }, `${fmt.num(x.os_cpu_s, 3)} s`) : h("td", null, "—"),
    h("td", null, x ? x.scope : "no OS CPU reported"),
    h("td", null, x ? usesText(x.capacity_uses) : "—"));
  const warned = [["baseline", a.baseline], ["current", a.current]]
    .filter(([, x]) => x && (x as api.CpuAgreement).warning) as [string, api.CpuAgreement][];
  const warns = warned.map(([k, x]) => h("li", null, h("strong", null, `${k}: `), x.warning!));
  const sampledOnly = warned.every(([, x]) => x.capacity_uses === "sampled");
  return h("div", { class: "agreement", "data-testid": "cpu-agreement" },
    h("table", { class: "inputs" },
      h("caption", null, "Sampled CPU vs CPU the OS accounted (ratio = sampled / OS)"),
      h("thead", null, h("tr", null, h("th", null, "window"), h("th", { class: "num" }, "ratio"), h("th", { class: "num" }, "sampled CPU"), h("th", { class: "num" }, "OS CPU"), h("th", null, "scope"), h("th", null, "capacity"))),
      h("tbody", null, row("baseline", a.baseline), row("current", a.current))),
    warns.length ? notice("warn", sampledOnly ? "Sampled CPU disagrees with the OS — the capacity figures use the sampled CPU"
      : "Sampled CPU disagrees with the OS — the capacity figures use the OS's figure", h("ul", null, ...warns)) : null);
}

function capacityPanel(d: api.DiffAnswer): HTMLElement {
  if (!d.capacity) {
    return h("div", { class: "panel capacity refused", "data-testid": "capacity-unavailable" },
      h("strong", null, "No vCPU-hours figure. "), d.capacity_unavailable ?? "unavailable", agreement(d));
  }
  const c = d.capacity;
  const inputs = (label: string, i: api.CapacityInputs) => h("div", null, h("table", { class: "inputs" },
    h("caption", null, label),
    h("tbody", null, ...([
      ["CPU seconds (Σ cpu_i)", fmt.num(i.cpu_s, 3)],
      ["of which the samples / the OS said", `${fmt.num(i.sampled_cpu_s, 3)} / ${i.os_cpu_s === null ? "—" : fmt.num(i.os_cpu_s, 3)} (factor ${i.cpu_factor === null ? "—" : i.cpu_factor.toFixed(3)}, basis ${i.cpu_basis})`],
      ["unattributed (the OS saw, no sample did)", fmt.num(i.unattributed_cpu_s, 3)],
      ["window |W|", fmt.secs(i.window_s)],
      ["profiled (Σ P_i)", fmt.secs(i.profiled_s)], ["alive (Σ A_i)", fmt.secs(i.alive_s)],
      ["coverage (Σ P / Σ A)", i.coverage === null ? "—" : fmt.pct(100 * i.coverage, 1)],
      ["instances alive / profiled / unprofiled", `${i.instances_alive} / ${i.instances_profiled} / ${i.instances_unprofiled}`],
      ["hours per month", String(i.hours_per_month)],
    ] as [string, string][]).map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))),
    h("tfoot", null, ...i.instances.map((x) => h("tr", null,
      h("th", null, `instance ${x.instance || "(unnamed)"}`),
      h("td", null, `cpu ${fmt.num(x.cpu_s, 3)} s (sampled ${fmt.num(x.sampled_cpu_s, 3)}, OS ${x.os_cpu_s === null ? "—" : fmt.num(x.os_cpu_s, 3)}) · P ${fmt.secs(x.profiled_s)} · A ${fmt.secs(x.alive_s)} → ${fmt.vcpu(x.vcpu_hours_per_month)} vCPU-h/mo`)))),
    ), i.cpu_note ? h("p", { class: "muted", "data-testid": "cpu-note" }, i.cpu_note) : null);
  const vb = c.vcpu_hours_per_month.base, vc = c.vcpu_hours_per_month.cur;
  return h("div", { class: "panel capacity", "data-testid": "capacity" },
    h("p", { class: "big" },
      h("span", null, "Service: baseline ", h("strong", { "data-testid": "capacity-base" }, fmt.vcpu(vb)), " → current ",
        h("strong", { "data-testid": "capacity-cur" }, fmt.vcpu(vc)), " vCPU-hours/month"),
      vb !== null && vc !== null ? h("span", { "data-testid": "capacity-delta" }, ` (${fmt.delta(vc - vb)})`) : ""),
    agreement(d),
    d.capacity_unavailable ? h("p", null, d.capacity_unavailable) : null,
    h("p", { class: "formula" }, "vCPU-hours/month = 730 × (1/|W|) × Σ_i cpu_i × A_i / P_i (DESIGN §7). A capacity estimate assuming the window's rate holds for a month, not a bill."),
    h("div", { class: "inputs-row" }, inputs("Baseline inputs", c.inputs.base), inputs("Current inputs", c.inputs.cur)),
    c.inputs.cur.unprofiled_note ? h("p", { class: "muted" }, c.inputs.cur.unprofiled_note) : null);
}

type Col = { key: string; label: string; get: (f: api.DiffFunction) => number | string | null; show: (f: api.DiffFunction) => string; num?: boolean };

function rankTable(d: api.DiffAnswer): HTMLElement {
  if (!d.functions.length) return notice("info", "No functions", "Neither window has samples for this type.");
  const rank = new Map(d.functions.map((f, k) => [f, k + 1]));
  const sig = (f: api.DiffFunction) => (f.significant === null ? "n/a" : f.significant ? "yes" : "no");
  const cols: Col[] = [
    { key: "rank", label: "#", get: (f) => rank.get(f)!, show: (f) => String(rank.get(f)), num: true },
    { key: "name", label: "Function", get: (f) => f.name, show: (f) => f.name },
    { key: "delta_pp", label: "Δ self share", get: (f) => f.delta_pp, show: (f) => fmt.pp(f.delta_pp), num: true },
    { key: "base_share", label: "Self base", get: (f) => f.base_share, show: (f) => fmt.pct(f.base_share), num: true },
    { key: "cur_share", label: "Self cur", get: (f) => f.cur_share, show: (f) => fmt.pct(f.cur_share), num: true },
    { key: "base_total_share", label: "Total base", get: (f) => f.base_total_share, show: (f) => fmt.pct(f.base_total_share), num: true },
    { key: "cur_total_share", label: "Total cur", get: (f) => f.cur_total_share, show: (f) => fmt.pct(f.cur_total_share), num: true },
    { key: "base_samples", label: "Samples base", get: (f) => f.base_samples, show: (f) => fmt.count(f.base_samples), num: true },
    { key: "cur_samples", label: "Samples cur", get: (f) => f.cur_samples, show: (f) => fmt.count(f.cur_samples), num: true },
    { key: "significant", label: "Significant", get: (f) => sig(f), show: sig },
  ];
  if (d.type === "cpu") cols.push(
    { key: "vb", label: "vCPU-h/mo base", get: (f) => f.vcpu_hours_per_month?.base ?? null, show: (f) => fmt.vcpu(f.vcpu_hours_per_month?.base), num: true },
    { key: "vc", label: "vCPU-h/mo cur", get: (f) => f.vcpu_hours_per_month?.cur ?? null, show: (f) => fmt.vcpu(f.vcpu_hours_per_month?.cur), num: true });
  let sortKey = "rank", asc = true;
  const tbody = h("tbody");
  const LIMIT = 500;
  let showAll = false;
  const more = h("button", { type: "button", class: "more" });
  const ths = cols.map((c) => {
    const th = h("th", { scope: "col", "data-key": c.key, "aria-sort": "none", class: c.num ? "num" : undefined },
      h("button", { type: "button", onclick: () => {
        if (sortKey === c.key) asc = !asc;
        else { sortKey = c.key; asc = c.key === "rank" || c.key === "name"; }
        render();
      } }, c.label));
    return th;
  });
  const render = () => {
    const col = cols.find((c) => c.key === sortKey)!;
    const rows = [...d.functions];
    if (sortKey !== "rank" || !asc) {
      rows.sort((a, b) => {
        const x = col.get(a), y = col.get(b);
        if (x === y) return rank.get(a)! - rank.get(b)!;
        if (x === null) return 1;
        if (y === null) return -1;
        const c = x < y ? -1 : 1;
        return asc ? c : -c;
      });
    }
    ths.forEach((th, k) => th.setAttribute("aria-sort", cols[k].key === sortKey ? (asc ? "ascending" : "descending") : "none"));
    const shown = showAll ? rows : rows.slice(0, LIMIT);
    replace(tbody, ...shown.map((f) => h("tr", { class: f.delta_pp > 0 ? "grown" : f.delta_pp < 0 ? "shrunk" : undefined },
      ...cols.map((c) => h("td", { class: c.num ? "num" : c.key === "name" ? "fn" : undefined },
        c.key === "name" ? fnName(f.name) : c.show(f), c.key === "name" && f.new ? h("span", { class: "tag" }, "new") : null)))));
    more.hidden = rows.length <= LIMIT || showAll;
    more.textContent = `Show all ${rows.length} functions`;
  };
  more.addEventListener("click", () => { showAll = true; render(); });
  render();
  return h("div", { class: "panel" },
    h("p", { class: "muted" }, "Share = self time / window total; Δ in percentage points. Default order is the API's (Δ descending); click a header to sort. Significance: two-sided z-test with overdispersion, Bonferroni-corrected (DESIGN §6)."),
    h("div", { class: "table-scroll" }, h("table", { class: "rank", "data-testid": "rank-table" }, h("thead", null, h("tr", null, ...ths)), tbody)),
    d.truncated ? h("p", { class: "muted" }, "The API truncated this list.") : null, more);
}

/** A function name that may wrap only after a separator (. : / ; _ $ # space), never
 * mid-identifier; a longer unbroken part scrolls the table sideways. */
function fnName(name: string): HTMLElement {
  const el = h("span", { class: "fn-name" });
  for (const part of name.split(/(?<=[.:/;_$#\\ ])/)) el.append(part, h("wbr"));
  return el;
}

function diffFlame(d: api.DiffAnswer): HTMLElement {
  const fg = d.flamegraph, n = fg.nodes;
  if (n.parent.length <= 1) return notice("info", "No flame graph", "Neither window has samples.");
  const width = n.base_share.map((b, i) => (b + n.cur_share[i]) / 2);
  let maxAbs = 0;
  for (let i = 1; i < n.delta_pp.length; i++) maxAbs = Math.max(maxAbs, Math.abs(n.delta_pp[i]));
  const legend = h("span", { class: "legend" }, h("span", { class: "sw grown" }), "grown", h("span", { class: "sw shrunk" }), "shrunk",
    " · width = mean share of both windows, colour intensity = |Δ|");
  const g = new FlameGraph({
    names: fg.names, parent: n.parent, depth: n.depth, name: n.name, width,
    color: (i) => deltaColor(n.delta_pp[i], maxAbs),
    describe: (i) => [fg.names[n.name[i]],
      `baseline: ${fmt.pct(n.base_share[i])} (${fmt.ns(n.base_ns[i])})`,
      `current: ${fmt.pct(n.cur_share[i])} (${fmt.ns(n.cur_ns[i])})`,
      `Δ ${fmt.pp(n.delta_pp[i])} (total, inclusive)`],
  }, { legend });
  return h("div", { class: "panel" }, fg.truncated ? notice("info", "Pruned", "The smallest frames were pruned to the server's node budget.") : null, g.el);
}
