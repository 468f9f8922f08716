// The services page: one row per service (its switch, types, instances by state, last upload,
// vCPU-hours/month over the last hour where it has CPU profiles), searchable by name and
// sortable by any column; the instances themselves are on each service's page. The search and
// the sort live in the address (#/?q=&sort=&dir=).

import * as api from "../api";
import { STATES, STATE_LABEL, State, keepInUrl, searchBox, stateCounts, toggle } from "../common";
import { h, notice, replace } from "../dom";
import * as fmt from "../fmt";
import { Column, SortTable } from "../table";

interface Row {
  s: api.Service;
  counts: Record<State, number>;
  /** undefined: not asked yet; null: no figure (reason in note). */
  vcpu?: number | null;
  note?: string;
}

const HOUR = 3600 * 1000;

function emptyPage(root: HTMLElement): void {
  replace(root, h("h1", null, "Services"), notice("info", "No services yet",
    "A service appears here when its SDK first asks for its config. To add one:",
    h("ol", null,
      h("li", null, "Make an ingest key: roottrace key create --scope ingest --service checkout"),
      h("li", null, `Node: rt = require('@roottrace/node'); rt.start({server: '${location.origin}', key, service: 'checkout', version})`),
      h("li", null, `Python: roottrace.start(server="${location.origin}", key=..., service="inventory", version=...)`),
      h("li", null, "Come back here and turn profiling on with the service's toggle: it is off until you do.")),
    "Profiles can also be uploaded directly: POST /api/v1/profiles or `roottrace ingest`."));
}

export async function servicesPage(root: HTMLElement, q: URLSearchParams): Promise<void> {
  const t0 = performance.now();
  const list = await api.get<api.Service[]>("/api/v1/services");
  if (!list.length) { emptyPage(root); return; }
  const rows: Row[] = list.map((s) => ({ s, counts: stateCounts(s.instances) }));
  const fleet = stateCounts(list.flatMap((s) => s.instances));
  const instances = list.reduce((n, s) => n + s.instances.length, 0);

  // vCPU-hours/month over the last hour: one GET /api/v1/profile per CPU service, asked for
  // the rows on screen (four at a time), or for all of them when sorting by it.
  const to = Date.now(), from = to - HOUR;
  const queue: Row[] = [];
  let running = 0;
  const waiters: (() => void)[] = [];
  const pump = () => {
    while (running < 4 && queue.length) {
      const r = queue.shift()!;
      running++;
      api.get<api.ProfileAnswer>("/api/v1/profile", { service: r.s.name, type: "cpu", from: new Date(from).toISOString(), to: new Date(to).toISOString(), limit: 1 })
        .then((p) => { r.vcpu = p.capacity ? p.capacity.vcpu_hours_per_month : null; r.note = p.capacity ? undefined : p.capacity_unavailable ?? "no figure"; })
        .catch((e) => { r.vcpu = null; r.note = e instanceof Error ? e.message : String(e); })
        .finally(() => {
          running--;
          paintVcpu(r);
          pump();
          if (!running && !queue.length) waiters.splice(0).forEach((w) => w());
        });
    }
  };
  const ask = (r: Row) => {
    if (r.vcpu !== undefined || queue.includes(r) || !r.s.types.includes("cpu")) return;
    r.vcpu = undefined;
    queue.push(r);
    pump();
  };
  const cells = new Map<Row, HTMLElement>();
  const paintVcpu = (r: Row) => {
    const el = cells.get(r);
    if (!el) return;
    if (!r.s.types.includes("cpu")) { el.textContent = "n/a"; el.title = "no CPU profiles: wall-clock time is not CPU time (DESIGN §7)"; return; }
    el.textContent = r.vcpu === undefined ? "…" : fmt.vcpu(r.vcpu);
    el.title = r.vcpu === undefined ? "asking the server" : r.vcpu === null ? `no figure: ${r.note}` : `${fmt.time(from)} to ${fmt.time(to)}`;
  };
  const seen = new IntersectionObserver((es) => {
    for (const e of es) if (e.isIntersecting) {
      const r = (e.target as HTMLElement & { row?: Row }).row;
      if (r) ask(r);
    }
  });
  const vcpuCell = (r: Row) => {
    const el = h("span", { "data-testid": "vcpu" }) as HTMLElement & { row?: Row };
    el.row = r;
    cells.set(r, el);
    paintVcpu(r);
    seen.observe(el);
    return el;
  };

  const cols: Column<Row>[] = [
    { key: "name", label: "Service", get: (r) => r.s.name, cell: (r) => h("a", { href: `#/service/${encodeURIComponent(r.s.name)}` }, r.s.name), class: "svc" },
    { key: "profiling", label: "Profiling", get: (r) => (r.s.profiling_enabled ? 1 : 0), cell: (r) => toggle(r.s, (on) => { r.s.profiling_enabled = on; }), num: false, asc: false },
    { key: "types", label: "Types", get: (r) => r.s.types.join(","), cell: (r) => r.s.types.length ? r.s.types.map((t) => h("span", { class: `badge small ${t}` }, t === "cpu" ? "CPU" : "Wall")) : h("span", { class: "muted" }, "none yet") },
    { key: "instances", label: "Instances", get: (r) => r.s.instances.length, num: true },
    ...STATES.map((st): Column<Row> => ({
      key: st, label: STATE_LABEL[st], get: (r) => r.counts[st], num: true, class: `state ${st}`,
      cell: (r) => (r.counts[st] ? h("span", { "data-state": st }, fmt.num(r.counts[st])) : h("span", { class: "zero" }, "0")),
      title: st === "other" ? "waiting, error, or no status reported yet" : st === "foreign" ? "another agent's instance (Pyroscope's): RootTrace cannot switch it" : undefined,
    })),
    { key: "last_upload", label: "Last upload", get: (r) => r.s.last_upload, cell: (r) => fmt.time(r.s.last_upload), asc: false },
    { key: "vcpu", label: "vCPU-h/mo, last hour", get: (r) => r.vcpu ?? null, cell: vcpuCell, num: true,
      title: "vCPU-hours per month at the last hour's rate, from CPU profiles (DESIGN §7); n/a for wall clock" },
  ];
  const dir = q.get("dir") === "asc" ? true : q.get("dir") === "desc" ? false : undefined;
  const sortKey = cols.some((c) => c.key === q.get("sort")) ? q.get("sort")! : "name";
  const sortAsc = dir ?? (cols.find((c) => c.key === sortKey)!.asc ?? !cols.find((c) => c.key === sortKey)!.num);
  const matching = (needle: string) => rows.filter((r) => r.s.name.toLowerCase().includes(needle.trim().toLowerCase()));
  const count = h("span", { class: "muted", "data-testid": "service-count" });
  const paintCount = (n: number) => { count.textContent = n === rows.length ? `${fmt.num(n)} services` : `${fmt.num(n)} of ${fmt.num(rows.length)} services`; };
  const table = new SortTable<Row>({
    cols, rows: matching(q.get("q") ?? ""), sort: { key: sortKey, asc: sortAsc }, pageSize: 200, testid: "services-table", class: "services",
    rowAttrs: (r) => ({ "data-service": r.s.name }),
    empty: "No service matches the search.",
    onSort: (key, asc) => {
      keepInUrl(q, { sort: key, dir: asc ? "asc" : "desc" });
      if (key === "vcpu") loadAll();
    },
  });
  // Sorting by vCPU-hours asks for every CPU service's figure, then sorts again.
  const loadAll = () => {
    for (const r of rows) ask(r);
    if (running || queue.length) waiters.push(() => table.setRows(matching(search.value)));
  };
  const search = searchBox("Search services", q.get("q") ?? "", (v) => {
    keepInUrl(q, { q: v });
    const m = matching(v);
    paintCount(m.length);
    table.setRows(m);
  }, "service-search");
  paintCount(matching(search.value).length);
  replace(root,
    h("div", { class: "page-head" }, h("h1", null, "Services"), count),
    h("p", { class: "fleet", "data-testid": "fleet-counts" }, `${fmt.num(instances)} instances: `,
      ...STATES.filter((st) => fleet[st]).flatMap((st, k) => [k ? " · " : "", h("span", { "data-state": st }, `${fmt.num(fleet[st])} ${STATE_LABEL[st]}`)])),
    h("div", { class: "controls" }, search,
      h("span", { class: "muted", "data-testid": "profiling-hint" }, "A service's profiling is off until you turn it on: its SDKs sample nothing until then.")),
    table.el);
  if (sortKey === "vcpu") loadAll();
  root.dataset.renderMs = (performance.now() - t0).toFixed(1);
}
