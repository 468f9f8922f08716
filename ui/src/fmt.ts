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
  const a = Math.abs(v);
  return a >= 100 ? num(v, 0) : a >= 1 ? num(v, 2) : num(v, 4);
}

/** Three significant figures (whole numbers from 100 up), no sign. */
export function sig3(v: number): string {
  const a = Math.abs(v);
  if (a >= 100) return num(a, 0);
  if (a === 0) return "0";
  return Number(a.toPrecision(3)).toLocaleString("en-US", { maximumFractionDigits: 20 });
}

/** A signed difference: "+12.3", "−80.1", "0". */
export function delta(v: number): string {
  const s = sig3(v);
  if (s === "0") return "0";
  return `${v > 0 ? "+" : "−"}${s}`;
}

/** A count: integers without decimals, fractions (weighted samples) with one. */
export function count(v: number | null | undefined): string {
  if (v === null || v === undefined) return "—";
  return Number.isInteger(v) ? num(v, 0) : num(v, 1);
}

/** A length of time in words: "2 min 47 s", "1 h 5 min", "45 s". */
export function span(s: number): string {
  let r = Math.max(0, Math.round(s));
  const parts: string[] = [];
  for (const [unit, n] of [["d", 86400], ["h", 3600], ["min", 60]] as [string, number][]) {
    if (r >= n) { parts.push(`${Math.floor(r / n)} ${unit}`); r %= n; }
  }
  if (r || !parts.length) parts.push(`${r} s`);
  return parts.join(" ");
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
