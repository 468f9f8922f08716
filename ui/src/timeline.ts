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
  // Markers sit in lanes above the bars, one per kind (issue start, declared, observed), so
  // markers at the same instant stay visible; labels in a lane are pushed apart, never drawn
  // over each other. The lane layout is published on the canvas (data-markers) for tests.
  const LANE_H = 14;
  const lanes = (["issue", "declared", "observed"] as Marker["kind"][]).filter((k) => o.markers.some((m) => m.kind === k));
  const PAD_B = 18, PAD_T = 16 + lanes.length * LANE_H, H = 124 + lanes.length * LANE_H;
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
      c.fillText(s.label, tx(s.from) + 4, H - PAD_B - 4);
    }
    const max = Math.max(1e-9, ...o.buckets.map((b) => b.value ?? 0));
    for (const b of o.buckets) {
      const x = tx(b.from), w = Math.max(1, tx(b.to) - x - 1);
      const v = b.value ?? 0;
      const bh = ((H - PAD_T - PAD_B - 14) * v) / max;
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
        if (x0 < 0 || x0 + w > cssW + 0.5) x0 = Math.max(0, cssW - w - 2);
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
    h("span", { class: "sw declared" }), "declared deploy (API/CI, solid)",
    h("span", { class: "sw observed" }), "observed deploy (an SDK reported a new version, dashed)",
    o.markers.some((m) => m.kind === "issue") ? h("span", { class: "sw issue" }) : null,
    o.markers.some((m) => m.kind === "issue") ? "issue start" : null,
    o.spans?.length ? h("span", { class: "sw baseline" }) : null, o.spans?.length ? "baseline" : null,
    o.spans?.length ? h("span", { class: "sw current" }) : null, o.spans?.length ? "current" : null);
  const el = h("div", { class: "timeline" }, h("div", { class: "timeline-wrap" }, canvas, tip), legend);
  requestAnimationFrame(draw);
  new ResizeObserver(() => requestAnimationFrame(draw)).observe(el);
  return el;
}
