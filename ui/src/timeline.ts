// A canvas timeline: profiled samples per time bucket, the windows of a diff, deploy markers
// (declared solid green, observed dashed orange) and an issue start (red). Clicking reports
// the time under the pointer. Labels are drawn with fillText; the legend is text nodes.

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
}

const COLORS = { declared: "#2b8a3e", observed: "#e8590c", issue: "#c92a2a", baseline: "rgba(76,110,245,0.10)", current: "rgba(224,49,49,0.10)" };

export function timeline(o: TimelineOpts): HTMLElement {
  const canvas = h("canvas", { class: "timeline-canvas", role: "img", "aria-label": "timeline" });
  const tip = h("div", { class: "timeline-tip", hidden: true });
  const H = 140, PAD_B = 18, PAD_T = 16;
  let cssW = 800;
  const span = Math.max(o.to - o.from, 1);
  const tx = (t: number) => ((t - o.from) / span) * cssW;
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
      c.fillText(s.label, tx(s.from) + 4, PAD_T + 12);
    }
    const max = Math.max(1e-9, ...o.buckets.map((b) => b.value ?? 0));
    for (const b of o.buckets) {
      const x = tx(b.from), w = Math.max(1, tx(b.to) - x - 1);
      const v = b.value ?? 0;
      const bh = ((H - PAD_T - PAD_B - 14) * v) / max;
      c.fillStyle = "#748ffc";
      c.fillRect(x, H - PAD_B - bh, w, bh);
    }
    for (const m of o.markers) {
      const x = tx(m.at);
      c.strokeStyle = COLORS[m.kind];
      c.lineWidth = m.kind === "issue" ? 2.5 : 1.5;
      c.setLineDash(m.kind === "observed" ? [4, 3] : []);
      c.beginPath();
      c.moveTo(x, PAD_T - 6);
      c.lineTo(x, H - PAD_B);
      c.stroke();
      c.fillStyle = COLORS[m.kind];
      c.fillText(m.label, Math.min(x + 3, cssW - 120), m.kind === "issue" ? PAD_T - 4 : PAD_T + 26);
    }
    c.setLineDash([]);
    c.fillStyle = "#495057";
    c.fillText(time(o.from), 2, H - 4);
    const end = time(o.to);
    c.fillText(end, cssW - c.measureText(end).width - 2, H - 4);
  };
  canvas.addEventListener("mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    const t = o.from + ((e.clientX - r.left) / cssW) * span;
    const b = o.buckets.find((x) => t >= x.from && t < x.to);
    tip.textContent = `${time(Math.round(t))}${b ? ` · ${b.value === null ? "—" : b.value.toFixed(0)} ${o.unit}` : ""}${o.onPick ? ` · ${o.pickHint ?? "click to pick"}` : ""}`;
    tip.hidden = false;
    tip.style.left = `${Math.min(e.clientX - r.left + 10, cssW - 280)}px`;
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  if (o.onPick) {
    canvas.classList.add("pickable");
    canvas.addEventListener("click", (e) => {
      const r = canvas.getBoundingClientRect();
      o.onPick?.(o.from + ((e.clientX - r.left) / cssW) * span);
    });
  }
  const legend = h("div", { class: "legend" },
    h("span", { class: "sw bars" }), `${o.unit} per bucket`,
    h("span", { class: "sw declared" }), "declared deploy (API/CI)",
    h("span", { class: "sw observed" }), "observed deploy (an SDK reported a new version)",
    o.markers.some((m) => m.kind === "issue") ? h("span", { class: "sw issue" }) : null,
    o.markers.some((m) => m.kind === "issue") ? "issue start" : null,
    o.spans?.length ? h("span", { class: "sw baseline" }) : null, o.spans?.length ? "baseline" : null,
    o.spans?.length ? h("span", { class: "sw current" }) : null, o.spans?.length ? "current" : null);
  const el = h("div", { class: "timeline" }, h("div", { class: "timeline-wrap" }, canvas, tip), legend);
  requestAnimationFrame(draw);
  new ResizeObserver(() => requestAnimationFrame(draw)).observe(el);
  return el;
}
