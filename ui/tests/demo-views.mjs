// The web UI on `make demo`'s data (scripts/demo.sh runs it when Chromium and the UI's npm
// packages are installed): each issue view opens with its answer on the first screen (the
// ranked table's first row is the API's, the table and the flame graph both above the fold at
// 1400 × 1000), the services page gives CPU services a vCPU-hours figure and the wall-clock one
// none, and a version compare of 1.0 → 2.0 ranks as the API does. Screenshots go to
// build/ui-screenshots/demo-*.png. Exits 1 if a view disagrees with the API.
// Usage: node ui/tests/demo-views.mjs URL ADMIN_TOKEN ISSUE_ID...
import { mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const [base, token, ...issues] = process.argv.slice(2);
const SHOTS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "build", "ui-screenshots");
mkdirSync(SHOTS, { recursive: true });
let failed = 0;
const check = (ok, what) => { console.log(`${ok ? "ok  " : "FAIL"} ${what}`); if (!ok) failed = 1; };
const get = async (path, params = {}) => {
  const u = new URL(base + path);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, String(v));
  return (await fetch(u, { headers: { Authorization: `Bearer ${token}` } })).json();
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
});
try {
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  await page.goto(base + "/");
  await page.fill("#token", token);
  await page.click("form.signin button[type=submit]");
  await page.waitForSelector("[data-testid=scope]");
  const shot = async (name) => {
    await page.screenshot({ path: join(SHOTS, `demo-${name}-first-screen.png`) });
    await page.setViewportSize({ width: 800, height: 1000 });
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(SHOTS, `demo-${name}-800.png`), fullPage: true });
    await page.setViewportSize({ width: 1400, height: 1000 });
  };

  const services = await get("/api/v1/services");
  for (const id of issues) {
    const issue = await get(`/api/v1/issues/${id}`);
    const types = services.find((s) => s.name === issue.service)?.types ?? [];
    const type = types.includes("cpu") ? "cpu" : types[0]; // what the issue page opens on
    // the previous issue's page (its table, its drawn flame graph) stays until the router's
    // hashchange handler runs: mark it, and wait for the new page's
    await page.evaluate(() => document.querySelectorAll(".view").forEach((v) => { v.dataset.old = "1"; }));
    await page.goto(`${base}/#/issue/${id}?window_s=60`);
    await page.waitForSelector(".view:not([data-old]) [data-testid=rank-table] tbody tr", { timeout: 30_000 });
    await page.waitForSelector(".view:not([data-old]) .flame[data-first-render-ms]", { timeout: 30_000 });
    const d = await get(`/api/v1/issues/${id}/diff`, { window_s: 60, type });
    const first = await page.getAttribute("[data-testid=rank-table] tbody tr:first-child", "data-fn");
    const table = await page.locator("[data-testid=rank-table]").boundingBox();
    const flame = await page.locator(".flame-canvas").boundingBox();
    check(first === d.functions[0]?.name, `issue ${id} (${issue.service}, ${d.type}): first row ${first}, the API's ${d.functions[0]?.name}`);
    check(table.y < 1000 && flame.y < 1000, `issue ${id}: the ranked table (y ${Math.round(table.y)}) and the flame graph (y ${Math.round(flame.y)}) on the first screen`);
    const cap = d.capacity ? await page.textContent("[data-testid=capacity-cur]") : await page.textContent("[data-testid=capacity-unavailable]");
    check(d.capacity ? /^[\d,.]+$/.test(cap) && Math.abs(Number(cap.replace(/,/g, "")) - d.capacity.vcpu_hours_per_month.cur) <= 0.01 * Math.abs(d.capacity.vcpu_hours_per_month.cur) + 0.01
      : cap.includes(d.capacity_unavailable), `issue ${id}: capacity ${d.capacity ? `${cap} vCPU-h/mo shown, the API's ${d.capacity.vcpu_hours_per_month.cur}` : "refused, with its reason"}`);
    await shot(`issue-${issue.service}`);
  }

  await page.goto(`${base}/#/`);
  await page.waitForSelector("[data-testid=services-table] tbody tr[data-service]");
  for (const s of services) {
    const cell = `tr[data-service="${s.name}"] [data-testid=vcpu]`;
    if (s.types.includes("cpu")) {
      await page.waitForFunction((sel) => !/…/.test(document.querySelector(sel)?.textContent ?? "…"), cell, { timeout: 30_000 });
      const shown = await page.textContent(cell);
      check(/^[\d,.]+$/.test(shown) || shown === "—", `services: ${s.name} ${shown} vCPU-h/mo over the last hour`);
    } else {
      check(await page.textContent(cell) === "n/a", `services: ${s.name} (wall clock) has no vCPU-hours figure`);
    }
  }
  await shot("services");

  const svc = services.find((s) => s.name === "checkout");
  if (svc) {
    await page.goto(`${base}/#/service/checkout?type=cpu`);
    await page.waitForSelector("[data-testid=compare-versions]", { timeout: 30_000 });
    await page.selectOption("[data-testid=baseline-version]", "1.0");
    await page.selectOption("[data-testid=current-version]", "2.0");
    await page.click("[data-testid=compare-versions]");
    await page.waitForSelector("[data-testid=rank-table] tbody tr", { timeout: 30_000 });
    const q = Object.fromEntries(new URLSearchParams((await page.evaluate(() => location.hash)).split("?")[1]));
    const d = await get("/api/v1/diff", { service: "checkout", ...q });
    const first = await page.getAttribute("[data-testid=rank-table] tbody tr:first-child", "data-fn");
    check(first === d.functions[0]?.name, `compare checkout 1.0 → 2.0: first row ${first}, the API's ${d.functions[0]?.name}`);
    await shot("compare-versions");
  }
} finally {
  await browser.close();
}
process.exit(failed);
