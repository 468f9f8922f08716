// Capacity in a diff (DESIGN §7): one line with both windows' vCPU-hours/month and the
// change, any disagreement between sampled and OS CPU said in view, and the inputs (formula,
// per-window and per-instance figures, sampled vs OS CPU) behind a disclosure; a wall-clock
// diff says why there is no figure.

import * as api from "../api";
import { h, notice } from "../dom";
import * as fmt from "../fmt";

/** Which figure the capacity took, in words (DESIGN §7). */
export function usesText(uses: api.CpuAgreement["capacity_uses"]): string {
  return uses === "os" ? "capacity uses the OS's figure"
    : uses === "sampled" ? "capacity uses the sampled figure" : "capacity uses the OS's figure where the sampler ticks on wall time";
}

/** Sampled CPU against the CPU the OS accounted to what the profiles cover, per window: any
 * warning in view, the table of both windows behind the disclosure given (or in view). */
function agreement(d: api.DiffAnswer, disclosure?: HTMLElement): HTMLElement | null {
  const a = d.cpu_agreement;
  if (!a || (!a.baseline && !a.current)) return null;
  const row = (label: string, x: api.CpuAgreement | null) => h("tr", null, h("th", null, label),
    x ? h("td", { class: "num", "data-testid": `agreement-ratio-${label}` }, x.ratio === null ? "—" : x.ratio.toFixed(2)) : h("td", null, "—"),
    x ? h("td", { class: "num" }, `${fmt.num(x.sampled_cpu_s, 3)} s`) : h("td", null, "—"),
    x ? h("td", { class: "num" }, `${fmt.num(x.os_cpu_s, 3)} s`) : h("td", null, "—"),
    h("td", null, x ? x.scope : "no OS CPU reported"),
    h("td", null, x ? usesText(x.capacity_uses) : "—"));
  const warned = [["baseline", a.baseline], ["current", a.current]]
    .filter(([, x]) => x && (x as api.CpuAgreement).warning) as [string, api.CpuAgreement][];
  const warns = warned.map(([k, x]) => h("li", null, h("strong", null, `${k}: `), x.warning!));
  const sampledOnly = warned.every(([, x]) => x.capacity_uses === "sampled");
  const table = h("table", { class: "inputs" },
      h("caption", null, "Sampled CPU vs CPU the OS accounted (ratio = sampled / OS)"),
      h("thead", null, h("tr", null, h("th", null, "window"), h("th", { class: "num" }, "ratio"), h("th", { class: "num" }, "sampled CPU"), h("th", { class: "num" }, "OS CPU"), h("th", null, "scope"), h("th", null, "capacity"))),
      h("tbody", null, row("baseline", a.baseline), row("current", a.current)));
  disclosure?.prepend(table);
  return h("div", { class: "agreement", "data-testid": "cpu-agreement" },
    warns.length ? notice("warn", sampledOnly ? "Sampled CPU disagrees with the OS — the capacity figures use the sampled CPU"
      : "Sampled CPU disagrees with the OS — the capacity figures use the OS's figure", h("ul", null, ...warns)) : null,
    disclosure ?? table);
}

/** The capacity panel of a diff: data-testid capacity (or capacity-unavailable). */
export function capacityPanel(d: api.DiffAnswer): HTMLElement {
  if (!d.capacity) {
    return h("div", { class: "panel capacity refused", "data-testid": "capacity-unavailable" },
      h("strong", null, "No vCPU-hours figure. "), d.capacity_unavailable ?? "unavailable", agreement(d));
  }
  const c = d.capacity;
  const inputs = (label: string, i: api.CapacityInputs) => h("div", null, h("table", { class: "inputs" },
    h("caption", null, label),
    h("tbody", null, ...([
      ["CPU seconds (Σ cpu_i)", fmt.num(i.cpu_s, 3)],
      ["of which the samples / the OS said", `${fmt.num(i.sampled_cpu_s, 3)} / ${i.os_cpu_s === null ? "—" : fmt.num(i.os_cpu_s, 3)} (factor ${i.cpu_factor === null ? "—" : i.cpu_factor.toFixed(3)}, basis ${i.cpu_basis})`],
      ["unattributed (the OS saw, no sample did)", fmt.num(i.unattributed_cpu_s, 3)],
      ["window |W|", fmt.secs(i.window_s)],
      ["profiled (Σ P_i)", fmt.secs(i.profiled_s)], ["alive (Σ A_i)", fmt.secs(i.alive_s)],
      ["coverage (Σ P / Σ A)", i.coverage === null ? "—" : fmt.pct(100 * i.coverage, 1)],
      ["instances alive / profiled / unprofiled", `${i.instances_alive} / ${i.instances_profiled} / ${i.instances_unprofiled}`],
      ["hours per month", String(i.hours_per_month)],
    ] as [string, string][]).map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))),
    h("tfoot", null, ...i.instances.map((x) => h("tr", null,
      h("th", null, `instance ${x.instance || "(unnamed)"}`),
      h("td", null, `cpu ${fmt.num(x.cpu_s, 3)} s (sampled ${fmt.num(x.sampled_cpu_s, 3)}, OS ${x.os_cpu_s === null ? "—" : fmt.num(x.os_cpu_s, 3)}) · P ${fmt.secs(x.profiled_s)} · A ${fmt.secs(x.alive_s)} → ${fmt.vcpu(x.vcpu_hours_per_month)} vCPU-h/mo`)))),
    ), i.cpu_note ? h("p", { class: "muted", "data-testid": "cpu-note" }, i.cpu_note) : null);
  const vb = c.vcpu_hours_per_month.base, vc = c.vcpu_hours_per_month.cur;
  const more = h("details", { class: "capacity-inputs", "data-testid": "capacity-inputs" },
    h("summary", null, "Inputs: the formula, each window's and each instance's figures, sampled vs OS CPU"),
    h("p", { class: "formula" }, "vCPU-hours/month = 730 × (1/|W|) × Σ_i cpu_i × A_i / P_i (DESIGN §7). A capacity estimate assuming the window's rate holds for a month, not a bill."),
    h("div", { class: "inputs-row" }, inputs("Baseline inputs", c.inputs.base), inputs("Current inputs", c.inputs.cur)),
    c.inputs.cur.unprofiled_note ? h("p", { class: "muted" }, c.inputs.cur.unprofiled_note) : null);
  return h("div", { class: "panel capacity", "data-testid": "capacity" },
    h("p", { class: "big" },
      h("span", null, "Service: baseline ", h("strong", { "data-testid": "capacity-base" }, fmt.vcpu(vb)), " → current ",
        h("strong", { "data-testid": "capacity-cur" }, fmt.vcpu(vc)), " vCPU-hours/month"),
      vb !== null && vc !== null ? h("span", { "data-testid": "capacity-delta" }, ` (${fmt.delta(vc - vb)})`) : ""),
    d.capacity_unavailable ? h("p", null, d.capacity_unavailable) : null,
    agreement(d, more) ?? more);
}
