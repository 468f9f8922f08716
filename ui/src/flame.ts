// A canvas flame graph (icicle: root on top) for the columnar trees of the API: preorder
// nodes with parent and depth columns. One renderer draws both the profile's flame graph
// (width = inclusive time) and the differential one (width = mean of both windows' shares,
// colour = Δ). Names are drawn with fillText, so they can never be markup. Handles the
// server's 50,000-node budget: layout is one pass, drawing skips sub-pixel frames, hit
// testing is a binary search within one depth.

import { h, replace } from "./dom";

export interface FlameModel {
  names: string[];
  parent: ArrayLike<number>;
  depth: ArrayLike<number>;
  name: ArrayLike<number>;
  /** Width measure per node; a node's children sum to at most its own. */
  width: ArrayLike<number>;
  /** Fill colour of node i (unless search dims it). */
  color(i: number): string;
  /** Tooltip lines for node i. */
  describe(i: number): string[];
  /** The node under the pointer changed (-1: none). */
  onHover?(i: number): void;
}

const ROW = 18;
const FONT = "11px system-ui, sans-serif";
const CHAR_W = 6.2;

export class FlameGraph {
  readonly el: HTMLElement;
  private canvas: HTMLCanvasElement;
  private tip: HTMLElement;
  private crumbs: HTMLElement;
  private status: HTMLElement;
  private x0: Float64Array;
  private byDepth: Int32Array[] = [];
  private maxDepth = 0;
  private focus = 0;
  private query = "";
  private matched: Uint8Array;
  /** The name whose frames are highlighted (a ranked table's row), or -1. */
  private hl = -1;
  private hovered = -1;
  private cssW = 0;
  /** Milliseconds of the first draw (layout included) and of the last draw. */
  firstRenderMs = 0;
  lastRenderMs = 0;

  constructor(private m: FlameModel, private opts: { legend?: HTMLElement; extra?: HTMLElement; onZoom?: (i: number) => void } = {}) {
    const n = m.parent.length;
    const t0 = performance.now();
    this.x0 = new Float64Array(n);
    this.matched = new Uint8Array(n);
    this.layout();
    this.canvas = h("canvas", { class: "flame-canvas", "aria-label": "flame graph", role: "img" });
    this.tip = h("div", { class: "flame-tip", hidden: true });
    this.crumbs = h("div", { class: "flame-crumbs" });
    this.status = h("span", { class: "flame-status" });
    const search = h("input", { type: "search", placeholder: "Search functions (press /)", class: "flame-search",
      "aria-label": "search functions", "data-search": "" });
    search.addEventListener("input", () => this.search(search.value));
    search.addEventListener("keydown", (e) => { if (e.key === "Escape") { search.value = ""; this.search(""); search.blur(); } });
    const reset = h("button", { type: "button", onclick: () => this.zoom(0) }, "Reset zoom");
    this.el = h("div", { class: "flame" },
      h("div", { class: "flame-bar" }, search, reset, opts.extra ?? null, this.status, opts.legend ?? null),
      this.crumbs,
      h("div", { class: "flame-wrap" }, this.canvas, this.tip));
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => { this.tip.hidden = true; this.setHovered(-1); });
    this.canvas.addEventListener("click", (e) => {
      const i = this.hit(e);
      if (i >= 0) this.zoom(i);
    });
    // Escape resets the zoom while this graph is on the page (focus anywhere); the listener
    // removes itself once the graph has left the document.
    const onKey = (e: KeyboardEvent) => {
      if (!this.el.isConnected) { document.removeEventListener("keydown", onKey); return; }
      if (e.key === "Escape" && this.focus !== 0) this.zoom(0);
      if (e.key === "Escape" && this.hl >= 0) this.highlight(-1);
    };
    document.addEventListener("keydown", onKey);
    const ro = new ResizeObserver(() => {
      const w = this.canvas.parentElement?.clientWidth ?? 0;
      if (w && Math.abs(w - this.cssW) > 1) this.draw();
    });
    requestAnimationFrame(() => {
      this.draw();
      this.firstRenderMs = performance.now() - t0;
      this.el.dataset.firstRenderMs = this.firstRenderMs.toFixed(1);
      this.el.dataset.nodes = String(n);
      ro.observe(this.el);
    });
  }

  /** x offset of every node within the root's width; nodes grouped by depth in x order. */
  private layout(): void {
    const { parent, depth, width } = this.m;
    const n = parent.length;
    const cursor = new Float64Array(n);
    const counts: number[] = [];
    for (let i = 0; i < n; i++) {
      const d = depth[i];
      counts[d] = (counts[d] ?? 0) + 1;
      if (d > this.maxDepth) this.maxDepth = d;
      const p = parent[i];
      if (p < 0) continue;
      this.x0[i] = this.x0[p] + cursor[p];
      cursor[p] += width[i];
    }
    const fill: number[] = [];
    for (let d = 0; d <= this.maxDepth; d++) {
      this.byDepth[d] = new Int32Array(counts[d] ?? 0);
      fill[d] = 0;
    }
    for (let i = 0; i < n; i++) this.byDepth[depth[i]][fill[depth[i]]++] = i;
  }

  /** Zooms so node i spans the full width (0 = the whole tree). */
  zoom(i: number): void {
    const t0 = performance.now();
    this.focus = i;
    this.draw();
    this.lastRenderMs = performance.now() - t0;
    this.el.dataset.zoomMs = this.lastRenderMs.toFixed(1);
    const path: number[] = [];
    for (let p = i; p >= 0; p = this.m.parent[p]) path.unshift(p);
    replace(this.crumbs, ...path.flatMap((p, k) => [
      k ? " › " : null,
      h("button", { type: "button", class: "crumb", onclick: () => this.zoom(p) }, this.m.names[this.m.name[p]]),
    ]));
    this.opts.onZoom?.(i);
  }

  /** Highlights every frame of one function (index into names; -1 clears), as a ranked
   * table's row asks; publishes the count of highlighted frames (data-highlighted). */
  highlight(nameIdx: number): void {
    if (nameIdx === this.hl) return;
    this.hl = nameIdx;
    let k = 0;
    if (nameIdx >= 0) for (let i = 0; i < this.m.name.length; i++) if (this.m.name[i] === nameIdx) k++;
    this.el.dataset.highlighted = String(k);
    this.draw();
  }

  private setHovered(i: number): void {
    if (i === this.hovered) return;
    this.hovered = i;
    this.m.onHover?.(i);
  }

  /** Highlights the frames whose name contains q (case-insensitive); "" clears. */
  search(q: string): void {
    this.query = q.trim().toLowerCase();
    const { names, name, parent, width } = this.m;
    this.matched.fill(0);
    let share = 0, hits = 0;
    if (this.query) {
      const hitName = names.map((s) => s.toLowerCase().includes(this.query));
      // A node counts once: its matched ancestors already hold its width.
      const covered = new Uint8Array(parent.length);
      for (let i = 0; i < parent.length; i++) {
        const p = parent[i];
        if (hitName[name[i]]) {
          this.matched[i] = 1;
          hits++;
          if (!(p >= 0 && covered[p])) share += width[i];
        }
        covered[i] = this.matched[i] || (p >= 0 ? covered[p] : 0);
      }
      const total = width[0] || 1;
      this.status.textContent = `${hits} frames match, ${((100 * share) / total).toFixed(2)}% of the width`;
    } else {
      this.status.textContent = "";
    }
    this.draw();
  }

  private draw(): void {
    const wrap = this.canvas.parentElement;
    const cssW = Math.max(300, wrap?.clientWidth ?? 800);
    this.cssW = cssW;
    const rows = Math.min(this.maxDepth + 1, 2000);
    const cssH = rows * ROW;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.floor(cssW * dpr);
    this.canvas.height = Math.floor(cssH * dpr);
    this.canvas.style.width = `${cssW}px`;
    this.canvas.style.height = `${cssH}px`;
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    const { width, parent, depth, name, names } = this.m;
    const f = this.focus;
    const fx = this.x0[f], fw = width[f] || 1, fd = depth[f];
    const scale = cssW / fw;
    const searching = this.query !== "" || this.hl >= 0;
    // Ancestors of the focus span the whole width.
    for (let p = parent[f]; p >= 0; p = parent[p]) this.box(ctx, p, 0, cssW, searching);
    for (let d = fd; d < rows; d++) {
      const list = this.byDepth[d];
      if (!list) break;
      let k = lowerBound(list, this.x0, fx - fw * 1e-9);
      for (; k < list.length; k++) {
        const i = list[k];
        const x = (this.x0[i] - fx) * scale;
        if (x >= cssW - 1e-6) break;
        const w = width[i] * scale;
        if (w < 0.5) continue;
        this.box(ctx, i, x, w, searching);
      }
    }
    void name; void names;
  }

  private box(ctx: CanvasRenderingContext2D, i: number, x: number, w: number, searching: boolean): void {
    const y = this.m.depth[i] * ROW;
    const marked = this.query !== "" ? this.matched[i] === 1 : this.m.name[i] === this.hl;
    ctx.fillStyle = searching ? (marked ? "#d6336c" : "#e9e9ee") : this.m.color(i);
    ctx.fillRect(x, y, Math.max(w - 1, 0.5), ROW - 1);
    if (w < 24) return;
    const label = this.m.names[this.m.name[i]];
    const fit = Math.floor((w - 6) / CHAR_W);
    ctx.fillStyle = searching && marked ? "#fff" : "#1b1b1f";
    ctx.fillText(label.length > fit ? `${label.slice(0, Math.max(fit - 1, 1))}…` : label, x + 3, y + ROW / 2);
  }

  /** The node under the pointer, or -1. */
  private hit(e: MouseEvent): number {
    const r = this.canvas.getBoundingClientRect();
    const px = e.clientX - r.left, py = e.clientY - r.top;
    const d = Math.floor(py / ROW);
    const f = this.focus;
    const { width, parent, depth } = this.m;
    if (d < depth[f]) { // an ancestor row
      for (let p = parent[f]; p >= 0; p = parent[p]) if (depth[p] === d) return p;
      return -1;
    }
    const list = this.byDepth[d];
    if (!list) return -1;
    const fw = width[f] || 1;
    const x = this.x0[f] + (px / this.cssW) * fw;
    let k = lowerBound(list, this.x0, x) - 1;
    for (let j = Math.max(k, 0); j < list.length && j <= k + 1; j++) {
      const i = list[j];
      if (this.x0[i] <= x && x < this.x0[i] + width[i] && this.x0[i] >= this.x0[f] - fw * 1e-9 &&
          this.x0[i] < this.x0[f] + fw) return i;
    }
    return -1;
  }

  private hover(e: MouseEvent): void {
    const i = this.hit(e);
    this.setHovered(i);
    if (i < 0) {
      this.tip.hidden = true;
      return;
    }
    replace(this.tip, ...this.m.describe(i).map((line, k) => h(k ? "div" : "strong", null, line)));
    this.tip.hidden = false;
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    this.tip.style.left = `${Math.min(x + 14, this.cssW - 320)}px`;
    this.tip.style.top = `${y + 16}px`;
  }
}

/** First k with x0[list[k]] >= x. */
function lowerBound(list: Int32Array, x0: Float64Array, x: number): number {
  let lo = 0, hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (x0[list[mid]] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A stable warm colour per name (for the single-window flame graph). */
export function nameColor(s: string): string {
  let x = 2166136261;
  for (let k = 0; k < s.length; k++) x = Math.imul(x ^ s.charCodeAt(k), 16777619);
  const u = (x >>> 0) / 4294967296;
  return `hsl(${Math.round(10 + 40 * u)}, ${Math.round(70 + 20 * u)}%, ${Math.round(58 + 12 * ((x >>> 8) & 255) / 255)}%)`;
}

/** Grown frames red, shrunk frames blue, intensity by |Δ| relative to the largest. */
export function deltaColor(delta: number, maxAbs: number): string {
  if (!maxAbs || Math.abs(delta) < 1e-9) return "#e2e2e6";
  const t = Math.min(1, Math.abs(delta) / maxAbs);
  const k = 0.15 + 0.85 * Math.sqrt(t);
  return delta > 0
    ? `rgb(${Math.round(255 - 35 * k)}, ${Math.round(225 - 185 * k)}, ${Math.round(225 - 185 * k)})`
    : `rgb(${Math.round(225 - 190 * k)}, ${Math.round(232 - 150 * k)}, ${Math.round(255 - 40 * k)})`;
}
