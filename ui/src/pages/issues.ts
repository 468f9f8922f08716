// The issues list: open and ended issues, by hand or from alerts (DESIGN §13), newest first,
// filterable by service and state (#/issues?service=&state=).

import * as api from "../api";
import { h, notice, replace } from "../dom";
import * as fmt from "../fmt";
import { SortTable } from "../table";

/** Who opened an issue: by hand, or which alerting system (DESIGN §13). */
export function openedBy(i: api.Issue): string {
  return i.source === "alertmanager" ? "Alertmanager alert" : i.source === "grafana" ? "Grafana alert" : "by hand";
}

export async function issuesPage(root: HTMLElement, q: URLSearchParams, go: (p: URLSearchParams) => void): Promise<void> {
  const state = q.get("state") === "open" || q.get("state") === "ended" ? q.get("state") as string : "";
  const service = q.get("service") ?? "";
  const [list, services] = await Promise.all([
    api.get<api.Issue[]>("/api/v1/issues", { state: state || undefined, service: service || undefined }),
    api.get<api.Service[]>("/api/v1/services"),
  ]);
  const set = (k: string, v: string) => { const n = new URLSearchParams(q); if (v) n.set(k, v); else n.delete(k); go(n); };
  const filter = h("div", { class: "tabs", "data-testid": "issue-state" }, ...[["", "All"], ["open", "Open"], ["ended", "Ended"]].map(([v, label]) =>
    h("button", { type: "button", "aria-pressed": String(v === state), onclick: () => set("state", v) }, label)));
  const names = [...new Set([...services.map((s) => s.name), service].filter(Boolean))].sort();
  const svcSel = h("select", { "aria-label": "service", "data-testid": "issue-service" },
    h("option", { value: "" }, "all services"), ...names.map((n) => {
      const o = h("option", { value: n }, n);
      o.selected = n === service;
      return o;
    }));
  svcSel.addEventListener("change", () => set("service", svcSel.value));
  const controls = h("div", { class: "controls" }, filter, h("label", null, "Service ", svcSel));
  if (!list.length) {
    replace(root, h("h1", null, "Issues"), controls, notice("info", state || service ? "No issues match" : "No issues yet", "Open one from a service's timeline (click a point: investigate from here), POST /api/v1/issues or `roottrace issue create`; or let an alert open it (docs/alerts.md)."));
    return;
  }
  const table = new SortTable<api.Issue>({
    rows: list, sort: { key: "started", asc: false }, pageSize: 200, class: "issues", testid: "issues-table",
    rowAttrs: (i) => ({ "data-source": i.source ?? "api", "data-issue": i.id }),
    cols: [
      { key: "title", label: "Issue", get: (i) => i.title, cell: (i) => h("a", { href: `#/issue/${i.id}` }, `#${i.id} ${i.title}`) },
      { key: "service", label: "Service", get: (i) => i.service, cell: (i) => h("a", { href: `#/service/${encodeURIComponent(i.service)}` }, i.service) },
      { key: "started", label: "Started", get: (i) => Date.parse(i.started_at), cell: (i) => fmt.time(i.started_at), asc: false },
      { key: "ended", label: "Ended", get: (i) => (i.ended_at ? Date.parse(i.ended_at) : null), cell: (i) => (i.ended_at ? fmt.time(i.ended_at) : "open"), asc: false },
      { key: "opened", label: "Opened", get: (i) => openedBy(i), cell: (i) => h("span", { "data-testid": "opened-by" }, openedBy(i), i.alert ? ` (${i.alert.status})` : "") },
    ],
  });
  replace(root, h("h1", null, "Issues"), controls, table.el);
}

/** The alert that opened an issue: its status, labels, lead time and a link to where it
 * fired (its generatorURL: Prometheus' graph, Grafana's rule). */
export function alertBox(i: api.Issue): HTMLElement | null {
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
