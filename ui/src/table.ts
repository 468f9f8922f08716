// One sortable, paged table for every list in the UI (services, instances, ranked functions):
// a header button per column sorts by it (again: reverses), ties keep the rows' given order,
// missing values (null) sort last either way, and rows beyond pageSize are paged, so a list of
// thousands renders only one page of rows.

import { Child, h, replace } from "./dom";

export interface Column<T> {
  key: string;
  label: string;
  /** The value sorted by; null sorts last. */
  get: (r: T) => number | string | null;
  /** The cell's content (default: get's value as text, "—" for null). */
  cell?: (r: T) => Child | Child[];
  num?: boolean;
  title?: string;
  /** Ascending on the first click (default: text columns ascending, numbers descending). */
  asc?: boolean;
  class?: string;
}

export interface TableOpts<T> {
  cols: Column<T>[];
  rows: T[];
  sort?: { key: string; asc: boolean };
  pageSize?: number;
  testid?: string;
  class?: string;
  /** Attributes of a row (data-*, class). */
  rowAttrs?: (r: T) => Record<string, string | undefined>;
  /** Called after the user sorts (to keep the choice in the URL). */
  onSort?: (key: string, asc: boolean) => void;
  empty?: string;
}

export class SortTable<T> {
  readonly el: HTMLElement;
  private tbody = h("tbody");
  private ths: HTMLElement[];
  private pager = h("div", { class: "pager" });
  private rows: T[];
  private sorted: T[] = [];
  private page = 0;
  private sortKey: string;
  private asc: boolean;
  private trOf = new Map<T, HTMLTableRowElement>();

  constructor(private o: TableOpts<T>) {
    this.rows = o.rows;
    this.sortKey = o.sort?.key ?? "";
    this.asc = o.sort?.asc ?? true;
    this.ths = o.cols.map((c) => h("th", { scope: "col", "data-key": c.key, "aria-sort": "none", class: c.num ? "num" : undefined, title: c.title },
      h("button", { type: "button", onclick: () => this.sortBy(c.key) }, c.label)));
    this.el = h("div", { class: "sort-table" },
      h("div", { class: "table-scroll" }, h("table", { class: o.class ?? "", "data-testid": o.testid }, h("thead", null, h("tr", null, ...this.ths)), this.tbody)),
      this.pager);
    this.render();
  }

  /** Sorts by key (the same key again reverses the order). */
  sortBy(key: string): void {
    const c = this.o.cols.find((x) => x.key === key);
    if (!c) return;
    if (this.sortKey === key) this.asc = !this.asc;
    else { this.sortKey = key; this.asc = c.asc ?? !c.num; }
    this.page = 0;
    this.render();
    this.o.onSort?.(this.sortKey, this.asc);
  }

  /** New rows (a search narrowed them); the sort stays, the page returns to the first. */
  setRows(rows: T[]): void {
    this.rows = rows;
    this.page = 0;
    this.render();
  }

  /** The row's element if it is on the current page. */
  rowElement(r: T): HTMLTableRowElement | undefined {
    return this.trOf.get(r);
  }

  /** Shows the page holding r (if r is among the rows) and returns its element. */
  reveal(r: T): HTMLTableRowElement | undefined {
    const k = this.sorted.indexOf(r);
    const size = this.o.pageSize ?? Infinity;
    if (k >= 0 && Math.floor(k / size) !== this.page) { this.page = Math.floor(k / size); this.render(); }
    return this.trOf.get(r);
  }

  /** Re-renders the current page (values changed). */
  refresh(): void {
    this.render(false);
  }

  private render(resort = true): void {
    const col = this.o.cols.find((c) => c.key === this.sortKey);
    if (resort || !this.sorted.length) {
      const order = new Map(this.rows.map((r, k) => [r, k]));
      this.sorted = [...this.rows];
      if (col) this.sorted.sort((a, b) => {
        const x = col.get(a), y = col.get(b);
        if (x === y) return order.get(a)! - order.get(b)!;
        if (x === null) return 1;
        if (y === null) return -1;
        const c = typeof x === "string" && typeof y === "string" ? x.localeCompare(y) : x < y ? -1 : 1;
        return (this.asc ? c : -c) || order.get(a)! - order.get(b)!;
      });
    }
    this.ths.forEach((th, k) => th.setAttribute("aria-sort", this.o.cols[k].key === this.sortKey ? (this.asc ? "ascending" : "descending") : "none"));
    const size = this.o.pageSize ?? Infinity;
    const pages = Math.max(1, Math.ceil(this.sorted.length / size));
    this.page = Math.min(this.page, pages - 1);
    const shown = size === Infinity ? this.sorted : this.sorted.slice(this.page * size, (this.page + 1) * size);
    this.trOf.clear();
    replace(this.tbody, ...shown.map((r) => {
      const tr = h("tr", this.o.rowAttrs?.(r) ?? null, ...this.o.cols.map((c) => {
        const v = c.cell ? c.cell(r) : c.get(r);
        const kids = Array.isArray(v) ? v : [v === null ? "—" : v];
        return h("td", { class: [c.num ? "num" : "", c.class ?? ""].join(" ").trim() || undefined }, ...kids);
      }));
      this.trOf.set(r, tr);
      return tr;
    }));
    if (!shown.length && this.o.empty) replace(this.tbody, h("tr", null, h("td", { colspan: this.o.cols.length, class: "muted" }, this.o.empty)));
    if (pages <= 1) { replace(this.pager); return; }
    const go = (p: number) => { this.page = p; this.render(false); };
    const first = this.page * size + 1, last = Math.min(this.sorted.length, (this.page + 1) * size);
    replace(this.pager,
      h("button", { type: "button", disabled: this.page === 0, onclick: () => go(this.page - 1) }, "‹ Previous"),
      h("span", { "data-testid": "pager-status" }, ` rows ${first.toLocaleString("en-US")}–${last.toLocaleString("en-US")} of ${this.sorted.length.toLocaleString("en-US")} `),
      h("button", { type: "button", disabled: this.page >= pages - 1, onclick: () => go(this.page + 1) }, "Next ›"));
  }
}
