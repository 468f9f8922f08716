// The diff views in the browser: an issue led by its answer (ranked table beside the flame
// graph on the first screen), ad hoc compare by dragging on a service's timeline and by
// versions, the links from a diff to either window's flame graph, the table and the graph
// pointing at each other, the inverted and focused views, the timeline's y-axis, the keyboard,
// and the issues list filtered by service. Every figure is checked against the API's answer.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { S, api, env, newPage, ready, shots, start, stop, upload } from "./fixture.mjs";

const T = Math.floor((Date.now() - 20 * 60 * S) / (60 * S)) * 60 * S;
let issue;

async function seed() {
  for (let k = 0; k < 10; k++) {
    await upload("shop", "cpu", T - (10 - k) * 60 * S, "main;handle;pricing.applyDiscount 50\nmain;handle;db.query 50\nmain;idle.loop 3\n", { instance: "shop-1", version: "1.0", runtime: "go" });
    await upload("shop", "cpu", T + k * 60 * S, "main;handle;pricing.applyDiscount 90\nmain;handle;db.query 25\nmain;idle.loop 3\n", { instance: "shop-1", version: "2.0", runtime: "go" });
    await upload("other", "cpu", T + k * 60 * S, "main;work 10\n", { instance: "o-1" });
  }
  assert.equal((await api("POST", "/api/v1/deploys", { service: "shop", version: "2.0", at: T / S })).status, 201);
  issue = (await api("POST", "/api/v1/issues", { service: "shop", title: "checkout slow", started_at: T / S })).body;
  for (const [svc, title, at] of [["shop", "earlier", T - 15 * 60 * S], ["other", "elsewhere", T], ["shop", "latest", T + 5 * 60 * S]])
    assert.equal((await api("POST", "/api/v1/issues", { service: svc, title, started_at: at / S })).status, 201);
}

before(() => start(seed));
after(stop);

const rows = (page) => page.$$eval("[data-testid=rank-table] tbody tr", (els) => els.map((e) => e.dataset.fn));
const params = (hash) => new URLSearchParams(hash.split("?")[1]);

/** The diff the API gives for the compare view's address. */
async function apiDiff(hash) {
  const p = Object.fromEntries(params(hash));
  return (await api("GET", "/api/v1/diff", undefined, { params: { service: "shop", ...p } })).body;
}

/** Drags on the timeline over [a, b) (ms). */
async function drag(page, a, b) {
  const plot = JSON.parse(await page.getAttribute(".timeline-canvas", "data-plot"));
  const box = await page.locator(".timeline-canvas").boundingBox();
  const x = (t) => box.x + plot.left + ((t - plot.from) / (plot.to - plot.from)) * (plot.width - plot.left);
  await page.mouse.move(x(a), box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move((x(a) + x(b)) / 2, box.y + box.height / 2, { steps: 4 });
  await page.mouse.move(x(b), box.y + box.height / 2, { steps: 4 });
  await page.mouse.up();
}

test("the issue leads with its answer: ranked table beside the flame graph on the first screen, one above the other at 800 px", async () => {
  const page = await newPage();
  await ready(page, `#/issue/${issue.id}?type=cpu&window_s=600`, ".flame[data-first-render-ms]");
  const d = (await api("GET", `/api/v1/issues/${issue.id}/diff`, undefined, { params: { type: "cpu", window_s: 600 } })).body;
  assert.deepEqual(await rows(page), d.functions.map((f) => f.name));
  const table = await page.locator("[data-testid=rank-table]").boundingBox();
  const flame = await page.locator(".flame-canvas").boundingBox();
  assert.ok(table.y < 1000 && flame.y < 1000, `both on the first screen: table at ${table.y}, flame graph at ${flame.y}`);
  assert.ok(flame.x > table.x + 400 && Math.abs(flame.y - table.y) < 200, "side by side at 1400 px");
  const cap = await page.locator("[data-testid=capacity]").boundingBox();
  const tl = await page.locator(".timeline").boundingBox();
  assert.ok(cap.y > table.y && tl.y > cap.y, "capacity after the answer, the timeline last");
  assert.equal(await page.isVisible("[data-testid=capacity-inputs] table"), false, "the inputs are behind a disclosure");
  await page.click("[data-testid=capacity-inputs] summary");
  assert.equal(await page.isVisible("[data-testid=capacity-inputs] table"), true);
  assert.match(await page.textContent("[data-testid=producers]"), /Sampled by/);
  await shots(page, "issue-answer-first");
  await page.setViewportSize({ width: 800, height: 1000 });
  await page.waitForTimeout(300);
  const t2 = await page.locator("[data-testid=rank-table]").boundingBox();
  const f2 = await page.locator(".flame-canvas").boundingBox();
  assert.ok(f2.y > t2.y + 100, "one above the other at 800 px");
  await page.context().close();
});

test("a row lights its frames, a frame lights its row; the tooltip gives shares, Δ and vCPU-hours; focus and inverted views", async () => {
  const page = await newPage();
  await ready(page, `#/issue/${issue.id}?type=cpu&window_s=600`, ".flame[data-first-render-ms]");
  const d = (await api("GET", `/api/v1/issues/${issue.id}/diff`, undefined, { params: { type: "cpu", window_s: 600 } })).body;
  const fg = d.flamegraph;
  const framesOf = (fn) => fg.nodes.name.filter((k) => fg.names[k] === fn).length;
  await page.hover('[data-testid=rank-table] tr[data-fn="pricing.applyDiscount"] td.fn');
  await page.waitForSelector(`.flame[data-highlighted="${framesOf("pricing.applyDiscount")}"]`);
  // a frame: depth 3 at the left edge
  const box = await page.locator(".flame-canvas").boundingBox();
  await page.mouse.move(box.x + 4, box.y + 3 * 18 + 9);
  await page.waitForSelector(".flame-tip:not([hidden])");
  const tip = await page.textContent(".flame-tip");
  const fn = await page.textContent(".flame-tip strong");
  assert.equal(await page.getAttribute("[data-testid=rank-table] tr.hl", "data-fn"), fn, "the frame's row is lit");
  const f = d.functions.find((x) => x.name === fn);
  assert.match(tip, /self: baseline [\d.]+% .* → current [\d.]+% .*, Δ [+-][\d.]+ pp/);
  assert.ok(tip.includes(`Δ ${f.delta_pp > 0 ? "+" : ""}${f.delta_pp.toFixed(2)} pp`), `${tip} vs ${f.delta_pp}`);
  assert.match(tip, /function self, all call paths: [\d.,]+ → [\d.,]+ vCPU-h\/mo/);
  // the inverted view: the leaves at the top, their callers below
  await page.click("[data-testid=flame-views] button[data-view=inverted]");
  await page.waitForSelector(".flame[data-view=inverted][data-first-render-ms]");
  assert.equal(await page.getAttribute(".flame", "data-nodes"), "9", "root + 3 leaves + handle, main under two of them + main under idle.loop");
  assert.match(await page.evaluate(() => location.hash), /view=inverted/);
  // a row's click focuses the graph on its function: every call path merged
  await page.click('[data-testid=rank-table] tr[data-fn="handle"] td.fn');
  await page.waitForSelector(".flame[data-view=focus][data-first-render-ms]");
  assert.equal(await page.getAttribute(".flame", "data-nodes"), "3", "handle, and the two it calls");
  assert.match(await page.evaluate(() => location.hash), /view=focus&fn=handle/);
  // the address restores it
  await page.reload();
  await page.waitForSelector(".flame[data-view=focus][data-first-render-ms]");
  await page.context().close();
});

test("drag a range on a service's timeline, compare it with the window before; a second drag picks the baseline", async () => {
  const page = await newPage();
  await ready(page, "#/service/shop?type=cpu", ".timeline-canvas[data-plot]");
  const ticks = JSON.parse(await page.getAttribute(".timeline-canvas", "data-yticks"));
  const plot = JSON.parse(await page.getAttribute(".timeline-canvas", "data-plot"));
  const tl = (await api("GET", "/api/v1/timeline", undefined, { params: { service: "shop", type: "cpu", from: plot.from / S, to: plot.to / S, buckets: 30 } })).body;
  const max = Math.max(...tl.buckets.map((b) => b.samples ?? 0));
  assert.ok(ticks[0] === 0 && ticks[ticks.length - 1] >= max && ticks[ticks.length - 2] < max, `y-axis ${ticks} for a largest bucket of ${max}`);
  assert.equal(await page.getAttribute(".timeline-canvas", "data-unit"), "samples");
  await drag(page, T, T + 10 * 60 * S);
  await page.waitForSelector("[data-testid=compare-before]");
  await shots(page, "service-selection");
  await page.click("[data-testid=compare-before]");
  await page.waitForSelector("[data-testid=rank-table] tbody tr");
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, /^#\/compare\/shop\?/);
  const p = params(hash);
  const [bf, bt, cf, ct] = ["base_from", "base_to", "cur_from", "cur_to"].map((k) => Date.parse(p.get(k)));
  assert.ok(Math.abs(cf - T) < 15 * S && Math.abs(ct - (T + 10 * 60 * S)) < 15 * S, `current ${p.get("cur_from")} → ${p.get("cur_to")}`);
  assert.equal(bt, cf, "the baseline ends where the current window starts");
  assert.equal(bt - bf, ct - cf, "the same length");
  const d = await apiDiff(hash);
  assert.deepEqual(await rows(page), d.functions.map((f) => f.name));
  assert.equal(d.functions[0].name, "pricing.applyDiscount");
  await shots(page, "compare");
  // a second drag: the baseline
  await ready(page, "#/service/shop?type=cpu", ".timeline-canvas[data-plot]");
  await drag(page, T + 2 * 60 * S, T + 8 * 60 * S);
  await page.waitForSelector("[data-testid=compare-before]");
  await drag(page, T - 8 * 60 * S, T - 2 * 60 * S);
  await page.waitForFunction(() => location.hash.startsWith("#/compare/"));
  await page.waitForSelector("[data-testid=rank-table] tbody tr");
  const q = params(await page.evaluate(() => location.hash));
  assert.ok(Math.abs(Date.parse(q.get("base_from")) - (T - 8 * 60 * S)) < 15 * S, q.toString());
  assert.ok(Math.abs(Date.parse(q.get("cur_to")) - (T + 8 * 60 * S)) < 15 * S, q.toString());
  await page.context().close();
});

test("compare two versions from the menu; one click from the diff to either window's flame graph", async () => {
  const page = await newPage();
  await ready(page, "#/service/shop?type=cpu", "[data-testid=compare-versions]");
  await page.selectOption("[data-testid=baseline-version]", "1.0");
  await page.selectOption("[data-testid=current-version]", "2.0");
  await page.click("[data-testid=compare-versions]");
  await page.waitForSelector("[data-testid=rank-table] tbody tr");
  const hash = await page.evaluate(() => location.hash);
  assert.equal(params(hash).get("base_version"), "1.0");
  assert.equal(params(hash).get("cur_version"), "2.0");
  const d = await apiDiff(hash);
  assert.ok(d.baseline.profiles > 0 && d.current.profiles > 0, JSON.stringify([d.baseline, d.current]));
  assert.deepEqual(await rows(page), d.functions.map((f) => f.name));
  assert.equal(d.functions[0].name, "pricing.applyDiscount");
  assert.match(await page.textContent("[data-testid=windows]"), /version 1\.0.*version 2\.0/s);
  // the current window's own flame graph, of its version
  // the diff's own flame graph is drawn already: mark it, and wait for the new page's, drawn
  await page.evaluate(() => document.querySelectorAll(".flame").forEach((e) => { e.dataset.old = "1"; }));
  await page.click("[data-testid=cur-flame]");
  await page.waitForSelector(".flame[data-nodes]:not([data-old])");
  const q = params(await page.evaluate(() => location.hash));
  assert.equal(q.get("version"), "2.0");
  assert.equal(q.get("from"), d.current.from);
  const prof = (await api("GET", "/api/v1/profile", undefined, { params: { service: "shop", type: "cpu", from: d.current.from, to: d.current.to, version: "2.0" } })).body;
  assert.equal(await page.getAttribute(".flame:not([data-old])", "data-nodes"), String(prof.flamegraph.nodes.parent.length));
  assert.equal(prof.profiles, d.current.profiles);
  await page.context().close();
});

test("keyboard: / focuses the flame graph's search, Escape clears it", async () => {
  const page = await newPage();
  await ready(page, "#/service/shop?type=cpu", ".flame[data-first-render-ms]");
  await page.keyboard.press("/");
  assert.equal(await page.evaluate(() => document.activeElement?.className), "flame-search");
  await page.keyboard.type("discount");
  await page.waitForFunction(() => /frames match/.test(document.querySelector(".flame-status")?.textContent ?? ""));
  await page.keyboard.press("Escape");
  assert.equal(await page.inputValue(".flame-search"), "");
  assert.equal(await page.textContent(".flame-status"), "");
  await page.context().close();
});

test("issues: newest first, filtered by service and by state", async () => {
  const page = await newPage();
  await ready(page, "#/issues", "[data-testid=issues-table] tbody tr");
  const titles = await page.$$eval("[data-testid=issues-table] tbody tr td:first-child", (els) => els.map((e) => e.textContent.replace(/^#\d+ /, "")));
  // by start, newest first; at the same start, the one opened last first
  assert.deepEqual(titles, ["latest", "elsewhere", "checkout slow", "earlier"]);
  // the unfiltered table stays until the router's hashchange handler runs: mark it, wait for the new one
  await page.evaluate(() => document.querySelectorAll("[data-testid=issues-table]").forEach((t) => { t.dataset.old = "1"; }));
  await page.selectOption("[data-testid=issue-service]", "shop");
  await page.waitForFunction(() => /service=shop/.test(location.hash));
  await page.waitForSelector("[data-testid=issues-table]:not([data-old]) tbody tr");
  const svcs = await page.$$eval("[data-testid=issues-table] tbody tr td:nth-child(2)", (els) => els.map((e) => e.textContent));
  assert.deepEqual(svcs, ["shop", "shop", "shop"]);
  await page.click("[data-testid=issue-state] button:nth-child(3)");
  await page.waitForFunction(() => /state=ended/.test(location.hash));
  await page.waitForSelector(".notice.info");
  await shots(page, "issues");
  await page.context().close();
});
