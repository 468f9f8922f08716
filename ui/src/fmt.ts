// Number and time formatting for display (values stay exact in the data).

export function pct(v: number | null | undefined, digits = 2): string {
  return v === null || v === undefined ? "—" : `${v.toFixed(digits)}%`;
}

export function pp(v: number): string {
  return `${v > 0 ? "+" : ""}${v.toFixed(2)} pp`;
}

export function num(v: number | null | undefined, digits = 0): string {
  if (v === null || v === undefined) return "—";
  return v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function vcpu(v: number | null | undefined): string {
  if (v === null || v === undefined) return "—";
  return v >= 100 ? num(v, 0) : v >= 1 ? num(v, 2) : num(v, 4);
}

export function secs(v: number | null | undefined): string {
  return v === null || v === undefined ? "—" : `${num(v, 1)} s`;
}

export function ns(v: number): string {
  if (v >= 1e9) return `${(v / 1e9).toFixed(2)} s`;
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)} ms`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1)} µs`;
  return `${v} ns`;
}

export function time(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined) return "never";
  const d = typeof iso === "number" ? new Date(iso) : new Date(iso);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC");
}

export function duration(s: number): string {
  if (s % 86400 === 0) return `${s / 86400} d`;
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}
