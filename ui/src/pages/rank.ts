// The ranked table of a diff: functions by growth of their self share (the API's order), any
// column sortable. Its rows and the differential flame graph point at each other: hovering a
// row highlights that function's frames, clicking it focuses the graph on the function, and
// hovering a frame highlights its row.

import * as api from "../api";
import { h, notice } from "../dom";
import * as fmt from "../fmt";
import { Column, SortTable } from "../table";

export interface RankLinks {
  onRowHover?: (name: string | null) => void;
  onRowClick?: (name: string) => void;
}

/** The table and a way to highlight the row of a function (null clears). */
export function rankTable(d: api.DiffAnswer, links: RankLinks = {}): { el: HTMLElement; highlight: (name: string | null) => void } {
  if (!d.functions.length) return { el: notice("info", "No functions", "Neither window has samples for this type."), highlight: () => undefined };
  const rank = new Map(d.functions.map((f, k) => [f, k + 1]));
  const byName = new Map(d.functions.map((f) => [f.name, f]));
  const sig = (f: api.DiffFunction) => (f.significant === null ? "n/a" : f.significant ? "yes" : "no");
  const pctCol = (key: keyof api.DiffFunction & string, label: string): Column<api.DiffFunction> =>
    ({ key, label, get: (f) => f[key] as number, cell: (f) => fmt.pct(f[key] as number), num: true });
  const cols: Column<api.DiffFunction>[] = [
    { key: "rank", label: "#", get: (f) => rank.get(f)!, num: true, asc: true },
    { key: "name", label: "Function", get: (f) => f.name, class: "fn", cell: (f) => [fnName(f.name), f.new ? h("span", { class: "tag" }, "new") : null] },
    { key: "delta_pp", label: "Δ self share", get: (f) => f.delta_pp, cell: (f) => fmt.pp(f.delta_pp), num: true, class: "delta" },
    pctCol("base_share", "Self base"), pctCol("cur_share", "Self cur"),
    pctCol("base_total_share", "Total base"), pctCol("cur_total_share", "Total cur"),
    { key: "base_samples", label: "Samples base", get: (f) => f.base_samples, cell: (f) => fmt.count(f.base_samples), num: true },
    { key: "cur_samples", label: "Samples cur", get: (f) => f.cur_samples, cell: (f) => fmt.count(f.cur_samples), num: true },
    { key: "significant", label: "Significant", get: sig },
  ];
  if (d.type === "cpu") cols.push(
    { key: "vb", label: "vCPU-h/mo base", get: (f) => f.vcpu_hours_per_month?.base ?? null, cell: (f) => fmt.vcpu(f.vcpu_hours_per_month?.base), num: true },
    { key: "vc", label: "vCPU-h/mo cur", get: (f) => f.vcpu_hours_per_month?.cur ?? null, cell: (f) => fmt.vcpu(f.vcpu_hours_per_month?.cur), num: true });
  const table = new SortTable<api.DiffFunction>({
    cols, rows: d.functions, sort: { key: "rank", asc: true }, pageSize: 500, testid: "rank-table", class: "rank",
    rowAttrs: (f) => ({ class: f.delta_pp > 0 ? "grown" : f.delta_pp < 0 ? "shrunk" : undefined, "data-fn": f.name }),
  });
  let lit: HTMLElement | undefined;
  const highlight = (name: string | null) => {
    lit?.classList.remove("hl");
    lit = undefined;
    const f = name === null ? undefined : byName.get(name);
    if (!f) return;
    lit = table.reveal(f);
    if (!lit) return;
    lit.classList.add("hl");
    // scroll the table (not the page) to the row
    const box = lit.closest(".table-scroll") as HTMLElement | null;
    if (box && (lit.offsetTop < box.scrollTop || lit.offsetTop > box.scrollTop + box.clientHeight - lit.offsetHeight))
      box.scrollTop = lit.offsetTop - box.clientHeight / 2;
  };
  const rowName = (e: Event) => (e.target as HTMLElement).closest("tr[data-fn]")?.getAttribute("data-fn") ?? null;
  table.el.addEventListener("mouseover", (e) => links.onRowHover?.(rowName(e)));
  table.el.addEventListener("mouseleave", () => links.onRowHover?.(null));
  table.el.addEventListener("click", (e) => {
    const n = rowName(e);
    if (n !== null && !(e.target as HTMLElement).closest("th")) links.onRowClick?.(n);
  });
  return {
    el: h("div", { class: "panel rank-panel" },
      table.el, d.truncated ? h("p", { class: "muted" }, "The API truncated this list.") : null,
      h("p", { class: "muted small" }, "Share = self time / window total; Δ in percentage points. Default order is the API's (Δ descending); click a header to sort. Hover a row to light its frames; click it to focus the flame graph on it. Significance: two-sided z-test with overdispersion, Bonferroni-corrected (DESIGN §6).")),
    highlight,
  };
}

/** A function name that may wrap only after a separator (. : / ; _ $ # space), never
 * mid-identifier; a longer unbroken part scrolls the table sideways. */
export function fnName(name: string): HTMLElement {
  const el = h("span", { class: "fn-name" });
  for (const part of name.split(/(?<=[.:/;_$#\\ ])/)) el.append(part, h("wbr"));
  return el;
}
