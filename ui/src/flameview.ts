// The flame graphs of an answer, with their views: top-down (the API's tree), inverted
// (bottom-up) and focus on one function (every call path of it merged, flametree.ts). One
// class serves the profile's flame graph (width = time) and the differential one (width =
// mean share of both windows, colour = Δ). Tooltips give total and self time with their
// shares of the window, Δ pp in a diff, and where the type is CPU the function's own
// vCPU-hours/month as the API computed it (self, all call paths: DESIGN §7).

import * as api from "./api";
import { h, replace } from "./dom";
import { FlameGraph, deltaColor, nameColor } from "./flame";
import { Tree, View, focused, inverted, selfOf } from "./flametree";
import * as fmt from "./fmt";

export interface ViewState { view: View; fn: string | null }

interface Source {
  tree: Tree;
  /** Tooltip lines and colour of node i of a (reshaped) tree. */
  describe(t: Tree, self: Float64Array[], i: number, topDown: boolean): string[];
  color(t: Tree, i: number, maxAbs: number): string;
  width(t: Tree): Float64Array;
  /** Largest |Δ| over the tree (diffs), for the colour scale. */
  maxAbs(t: Tree): number;
  legend?: HTMLElement;
}

const VIEWS: [View, string][] = [["top-down", "Top-down"], ["inverted", "Inverted (bottom-up)"], ["focus", "Focus on function"]];

export class FlameView {
  readonly el = h("div", { class: "flame-view" });
  private bar = h("div", { class: "flame-views tabs", "data-testid": "flame-views" });
  private body = h("div");
  graph: FlameGraph | null = null;
  private nameIdx = new Map<string, number>();

  constructor(private src: Source, private state: ViewState, private onState?: (s: ViewState) => void,
    private onHoverName?: (name: string | null) => void) {
    src.tree.names.forEach((s, k) => this.nameIdx.set(s, k));
    append(this.el, this.bar, this.body);
    this.render();
  }

  /** Highlights the frames of the named function (null clears). */
  highlightName(name: string | null): void {
    this.graph?.highlight(name === null ? -1 : this.nameIdx.get(name) ?? -1);
  }

  /** Switches to the focus view on the named function. */
  focusOn(name: string): void {
    this.set({ view: "focus", fn: name });
  }

  set(s: ViewState): void {
    this.state = s;
    this.onState?.(s);
    this.render();
  }

  private render(): void {
    const { view, fn } = this.state;
    replace(this.bar, ...VIEWS.map(([v, label]) => h("button", {
      type: "button", "aria-pressed": String(v === view), "data-view": v,
      disabled: v === "focus" && !fn,
      title: v === "focus" && !fn ? "click a frame, then “Focus on”; or a row of the ranked table" : undefined,
      onclick: () => this.set({ view: v, fn }),
    }, v === "focus" && fn ? `Focus on ${fn}` : label)));
    let t: Tree | null = this.src.tree;
    if (view === "inverted") t = inverted(this.src.tree);
    if (view === "focus") t = fn !== null && this.nameIdx.has(fn) ? focused(this.src.tree, this.nameIdx.get(fn)!) : null;
    if (!t) {
      replace(this.body, h("p", { class: "muted" }, `No frame of ${fn ?? "that function"} in this answer.`));
      this.graph = null;
      return;
    }
    const tree = t;
    const self = tree.measures.map((_, m) => selfOf(tree, m));
    const maxAbs = this.src.maxAbs(tree);
    const focusBtn = h("button", { type: "button", class: "focus-fn", hidden: true, "data-testid": "focus-fn" });
    const g = new FlameGraph({
      names: tree.names, parent: tree.parent, depth: tree.depth, name: tree.name, width: this.src.width(tree),
      color: (i) => this.src.color(tree, i, maxAbs),
      describe: (i) => this.src.describe(tree, self, i, view === "top-down"),
      onHover: (i) => this.onHoverName?.(i > 0 ? tree.names[tree.name[i]] : null),
    }, { legend: this.src.legend, extra: focusBtn, onZoom: (i) => {
      const name = tree.names[tree.name[i]];
      focusBtn.hidden = i <= 0;
      focusBtn.textContent = `Focus on ${name}: merge its call paths`;
      focusBtn.onclick = () => this.focusOn(name);
    } });
    g.el.dataset.view = view;
    this.graph = g;
    replace(this.body, g.el);
  }
}

function append(el: HTMLElement, ...kids: HTMLElement[]): void {
  for (const k of kids) el.appendChild(k);
}

const share = (v: number, total: number) => (total > 0 ? (100 * v) / total : 0);

/** The flame graph of one window (GET /api/v1/profile). */
export function profileFlame(p: api.ProfileAnswer, state: ViewState, onState?: (s: ViewState) => void): FlameView {
  const fg = p.flamegraph, n = fg.nodes;
  const total = n.total_ns[0] || 1;
  const vcpu = new Map(p.functions.map((f) => [f.name, f.vcpu_hours_per_month]));
  return new FlameView({
    tree: { names: fg.names, parent: n.parent, depth: n.depth, name: n.name, measures: [n.total_ns] },
    width: (t) => Float64Array.from(t.measures[0]),
    maxAbs: () => 0,
    color: (t, i) => nameColor(t.names[t.name[i]]),
    describe: (t, self, i, topDown) => {
      const name = t.names[t.name[i]], tot = t.measures[0][i], s = self[0][i];
      const lines = [name, `total ${fmt.ns(tot)} (${share(tot, total).toFixed(2)}% of the window)`,
        `self ${fmt.ns(s)} (${share(s, total).toFixed(2)}%)`];
      if (topDown) lines.push(`samples ${fmt.count(n.samples[i])}`);
      if (p.type === "cpu" && i > 0) {
        const v = vcpu.get(name);
        lines.push(v === undefined ? "vCPU-h/mo: not among the answer's functions" : `function self, all call paths: ${fmt.vcpu(v)} vCPU-h/mo`);
      }
      return lines;
    },
  }, state, onState);
}

/** The differential flame graph of a diff (baseline vs current). */
export function diffFlame(d: api.DiffAnswer, state: ViewState, onState?: (s: ViewState) => void, onHoverName?: (name: string | null) => void): FlameView {
  const fg = d.flamegraph, n = fg.nodes;
  const bt = n.base_ns[0] || 0, ct = n.cur_ns[0] || 0;
  const fns = new Map(d.functions.map((f) => [f.name, f]));
  const shares = (t: Tree, i: number) => [share(t.measures[0][i], bt), share(t.measures[1][i], ct)];
  const legend = h("span", { class: "legend" }, h("span", { class: "sw grown" }), "grown", h("span", { class: "sw shrunk" }), "shrunk",
    " · width = mean share of both windows, colour intensity = |Δ|");
  return new FlameView({
    tree: { names: fg.names, parent: n.parent, depth: n.depth, name: n.name, measures: [n.base_ns, n.cur_ns] },
    legend,
    width: (t) => Float64Array.from({ length: t.parent.length }, (_, i) => { const [b, c] = shares(t, i); return (b + c) / 2; }),
    maxAbs: (t) => {
      let m = 0;
      for (let i = 1; i < t.parent.length; i++) { const [b, c] = shares(t, i); m = Math.max(m, Math.abs(c - b)); }
      return m;
    },
    color: (t, i, maxAbs) => { const [b, c] = shares(t, i); return deltaColor(c - b, maxAbs); },
    describe: (t, self, i) => {
      const name = t.names[t.name[i]];
      const [b, c] = shares(t, i);
      const sb = share(self[0][i], bt), sc = share(self[1][i], ct);
      const lines = [name,
        `total: baseline ${fmt.pct(b)} (${fmt.ns(t.measures[0][i])}) → current ${fmt.pct(c)} (${fmt.ns(t.measures[1][i])}), Δ ${fmt.pp(c - b)}`,
        `self: baseline ${fmt.pct(sb)} (${fmt.ns(self[0][i])}) → current ${fmt.pct(sc)} (${fmt.ns(self[1][i])}), Δ ${fmt.pp(sc - sb)}`];
      const f = fns.get(name);
      if (d.type === "cpu" && i > 0)
        lines.push(f?.vcpu_hours_per_month ? `function self, all call paths: ${fmt.vcpu(f.vcpu_hours_per_month.base)} → ${fmt.vcpu(f.vcpu_hours_per_month.cur)} vCPU-h/mo` : "vCPU-h/mo: no figure for this function");
      return lines;
    },
  }, state, onState, onHoverName);
}
