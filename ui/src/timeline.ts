// A canvas timeline: profiled samples per time bucket on a y-axis with its unit, the windows
// of a diff, deploy markers (declared solid green, observed dashed orange) and an issue start
// (red). Clicking reports the time under the pointer; dragging reports the range selected.
// Labels are drawn with fillText; the legend is text nodes.

import { h } from "./dom";
import { time } from "./fmt";

export interface Bucket { from: number; to: number; value: number | null }
export interface Marker { at: number; label: string; kind: "declared" | "observed" | "issue" }
export interface Span { from: number; to: number; label: string; kind: "baseline" | "current" }

export interface TimelineOpts {
  from: number; to: number; buckets: Bucket[]; markers: Marker[]; spans?: Span[];
  unit: string;
  onPick?: (t: number) => void;
  pickHint?: string;
  /** A drag over at least 5 px selected [from, to). */
  onSelect?: (from: number, to: number) => void;
}

/** Axis ticks: 0 and multiples of a 1-2-5 step, the last at or above max. */
export function ticks(max: number, want = 3): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / want, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((x) => x >= raw)!;
  const out = [0];
  while (out[out.length - 1] < max - 1e-9) out.push(+(out[out.length - 1] + step).toPrecision(12));
  return out;
}

const COLORS = { declared: "#2b8a3e", observed: "#e8590c", issue: "#c92a2a", baseline: "rgba(76,110,245,0.10)", current: "rgba(224,49,49,0.10)" };

/** The timeline's element; setSpans redraws it with other windows shaded. */
export function timeline(o: TimelineOpts): HTMLElement & { setSpans?: (s: Span[]) => void } {
  const canvas = h("canvas", { class: "timeline-canvas", role: "img", "aria-label": "timeline" });
  const band = h("div", { class: "timeline-band", hidden: true });
  const tip = h("div", { class: "timeline-tip", hidden: true });
  // Markers sit in lanes above the bars, one per kind (issue start, declared, observed), so
  // markers at the same instant stay visible; labels in a lane are pushed apart, never drawn
  // over each other. The lane layout is published on the canvas (data-markers) for tests.
  const LANE_H = 14;
  const lanes = (["issue", "declared", "observed"] as Marker["kind"][]).filter((k) => o.markers.some((m) => m.kind === k));
  const PAD_B = 18, PAD_T = 16 + lanes.length * LANE_H, H = 124 + lanes.length * LANE_H;
  const PAD_L = 52;
  let cssW = 800;
  const span = Math.max(o.to - o.from, 1);
  const tx = (t: number) => PAD_L + ((t - o.from) / span) * (cssW - PAD_L);
  const tOf = (x: number) => o.from + Math.min(1, Math.max(0, (x - PAD_L) / (cssW - PAD_L))) * span;
  const draw = () => {
    cssW = Math.max(300, canvas.parentElement?.clientWidth ?? 800);
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.floor(cssW * dpr);
    canvas.height = Math.floor(H * dpr);
    canvas.style.width = `${cssW}px`;
    canvas.style.height = `${H}px`;
    const c = canvas.getContext("2d");
    if (!c) return;
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, cssW, H);
    c.font = "11px system-ui, sans-serif";
    for (const s of o.spans ?? []) {
      c.fillStyle = COLORS[s.kind];
      c.fillRect(tx(s.from), PAD_T, tx(s.to) - tx(s.from), H - PAD_T - PAD_B);
      c.fillStyle = "#495057";
      c.fillText(s.label, tx(s.from) + 4, H - PAD_B - 4);
    }
    const ys = ticks(Math.max(0, ...o.buckets.map((b) => b.value ?? 0)));
    const max = ys[ys.length - 1];
    const plotH = H - PAD_T - PAD_B - 14;
    const ty = (v: number) => H - PAD_B - (plotH * v) / max;
    c.textAlign = "right";
    for (const v of ys) {
      c.fillStyle = "#eceef2";
      c.fillRect(PAD_L, Math.round(ty(v)), cssW - PAD_L, 1);
      c.fillStyle = "#495057";
      c.fillText(v.toLocaleString("en-US"), PAD_L - 6, ty(v) + 4);
    }
    c.fillText(o.unit, PAD_L - 6, PAD_T + 6);
    c.textAlign = "left";
    canvas.dataset.yticks = JSON.stringify(ys);
    // the plot's geometry, for tests that drag over a time range: x = left + (t − from) / (to − from) × (width − left)
    canvas.dataset.plot = JSON.stringify({ from: o.from, to: o.to, left: PAD_L, width: cssW });
    canvas.dataset.unit = o.unit;
    for (const b of o.buckets) {
      const x = tx(b.from), w = Math.max(1, tx(b.to) - x - 1);
      const v = b.value ?? 0;
      const bh = (plotH * v) / max;
      c.fillStyle = "#748ffc";
      c.fillRect(x, H - PAD_B - bh, w, bh);
    }
    const placed: { kind: string; label: string; lane: number; x: number; x0: number; x1: number }[] = [];
    // Lines first (issue start underneath, then declared, then observed: the dashed observed
    // line stays visible over a solid one at the same instant), labels after.
    const order = { issue: 0, declared: 1, observed: 2 };
    const sorted = [...o.markers].sort((a, b) => order[a.kind] - order[b.kind] || a.at - b.at);
    for (const m of sorted) {
      const lane = lanes.indexOf(m.kind);
      const x = tx(m.at);
      const top = 16 + lane * LANE_H + 2;
      c.strokeStyle = COLORS[m.kind];
      c.lineWidth = m.kind === "issue" ? 2.5 : m.kind === "declared" ? 2 : 1.5;
      c.setLineDash(m.kind === "observed" ? [4, 3] : []);
      c.beginPath();
      c.moveTo(x, top);
      c.lineTo(x, H - PAD_B);
      c.stroke();
      c.setLineDash([]);
      // the lane's head: a filled triangle (declared, issue) or a hollow one (observed)
      c.beginPath();
      c.moveTo(x - 4, top - 2);
      c.lineTo(x + 4, top - 2);
      c.lineTo(x, top + 4);
      c.closePath();
      if (m.kind === "observed") { c.lineWidth = 1.2; c.stroke(); } else { c.fillStyle = COLORS[m.kind]; c.fill(); }
    }
    for (const lane of lanes) {
      let end = -Infinity;
      for (const m of sorted.filter((x) => x.kind === lane)) {
        const label = m.kind === "issue" ? m.label : `${m.label} (${m.kind})`;
        const w = c.measureText(label).width;
        const x = tx(m.at);
        let x0 = Math.max(x + 6, end + 8);
        if (x0 + w > cssW - 2) x0 = Math.max(end + 8, x - 6 - w);
        if (x0 < PAD_L || x0 + w > cssW + 0.5) x0 = Math.max(PAD_L, cssW - w - 2);
        const y = 16 + lanes.indexOf(lane) * LANE_H + 8;
        c.fillStyle = "rgba(255,255,255,0.9)"; // labels sit over other lanes' lines
        c.fillRect(x0 - 2, y - 10, w + 4, 12);
        c.fillStyle = COLORS[m.kind];
        c.fillText(label, x0, y);
        placed.push({ kind: m.kind, label, lane: lanes.indexOf(lane), x, x0, x1: x0 + w });
        end = Math.max(end, x0 + w);
      }
    }
    canvas.dataset.markers = JSON.stringify(placed.map((p) => ({ ...p, x: Math.round(p.x), x0: Math.round(p.x0), x1: Math.round(p.x1) })));
    canvas.setAttribute("aria-label", `timeline${placed.length ? ": " + o.markers.map((m) => `${m.kind === "issue" ? m.label : `${m.kind} deploy ${m.label}`} at ${time(m.at)}`).join("; ") : ""}`);
    c.fillStyle = "#495057";
    c.fillText(time(o.from), PAD_L, H - 4);
    const end = time(o.to);
    c.fillText(end, cssW - c.measureText(end).width - 2, H - 4);
  };
  let down: number | null = null;
  const xOf = (e: MouseEvent) => e.clientX - canvas.getBoundingClientRect().left;
  canvas.addEventListener("mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    const t = tOf(e.clientX - r.left);
    if (down !== null && o.onSelect) {
      const a = Math.max(PAD_L, Math.min(down, xOf(e))), b = Math.min(cssW, Math.max(down, xOf(e)));
      band.hidden = b - a < 5;
      band.style.left = `${a}px`;
      band.style.width = `${b - a}px`;
    }
    const b = o.buckets.find((x) => t >= x.from && t < x.to);
    tip.textContent = `${time(Math.round(t))}${b ? ` · ${b.value === null ? "—" : b.value.toFixed(0)} ${o.unit}` : ""}${o.onPick ? ` · ${o.pickHint ?? "click to pick"}` : ""}`;
    tip.hidden = false;
    tip.style.left = `${Math.min(e.clientX - r.left + 10, cssW - 280)}px`;
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  if (o.onPick || o.onSelect) {
    canvas.classList.add("pickable");
    canvas.addEventListener("mousedown", (e) => { down = xOf(e); e.preventDefault(); });
    const up = (e: MouseEvent) => {
      if (!canvas.isConnected) { window.removeEventListener("mouseup", up); return; }
      if (down === null) return;
      const x = xOf(e), start = down;
      down = null;
      band.hidden = true;
      if (Math.abs(x - start) >= 5 && o.onSelect) o.onSelect(tOf(Math.min(start, x)), tOf(Math.max(start, x)));
      else if (e.target === canvas) o.onPick?.(tOf(x));
    };
    window.addEventListener("mouseup", up);
  }
  const legend = h("div", { class: "legend" },
    h("span", { class: "sw bars" }), `${o.unit} per bucket`,
    h("span", { class: "sw declared" }), "declared deploy (API/CI, solid)",
    h("span", { class: "sw observed" }), "observed deploy (an SDK reported a new version, dashed)",
    o.markers.some((m) => m.kind === "issue") ? h("span", { class: "sw issue" }) : null,
    o.markers.some((m) => m.kind === "issue") ? "issue start" : null,
    o.spans?.length ? h("span", { class: "sw baseline" }) : null, o.spans?.length ? "baseline" : null,
    o.spans?.length ? h("span", { class: "sw current" }) : null, o.spans?.length ? "current" : null);
  const el = h("div", { class: "timeline" }, h("div", { class: "timeline-wrap" }, canvas, band, tip), legend) as HTMLElement & { setSpans?: (s: Span[]) => void };
  el.setSpans = (s) => { o.spans = s; requestAnimationFrame(draw); };
  requestAnimationFrame(draw);
  new ResizeObserver(() => requestAnimationFrame(draw)).observe(el);
  return el;
}
