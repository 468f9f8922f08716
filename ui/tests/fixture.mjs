// What every browser test file shares: a real `build/roottrace serve` on a free port with an
// empty data directory, the API as an admin, folded-stack uploads, Debian's Chromium through
// playwright-core, pages signed in, screenshots into build/ui-screenshots/ (1400 px wide, and
// 800 px where asked). Each test file starts its own server (node --test runs files apart).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, existsSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import net from "node:net";
import { chromium } from "playwright-core";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const BIN = process.env.ROOTTRACE_BIN ?? join(REPO, "build", "roottrace");
const SHOTS = join(REPO, "build", "ui-screenshots");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const ADMIN = "rt_ui_test_admin_0123456789abcdef";
export const S = 1000;

/** The running server and browser; dialogs and CSP errors seen by any page. */
export const env = { base: "", browser: null, server: null, dataDir: "", dialogs: [], cspErrors: [] };

function freePort() {
  return new Promise((res) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** One API call: { status, body } (body parsed as JSON). */
export async function api(method, path, body, { token = ADMIN, type = "application/json", params } = {}) {
  const url = new URL(env.base + path);
  for (const [k, v] of Object.entries(params ?? {})) url.searchParams.set(k, String(v));
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers["Content-Type"] = type;
  const r = await fetch(url, { method, headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

/** A 60 s folded-stack profile starting at start (ms), asserted stored (201). */
export async function upload(service, type, start, text, extra = {}) {
  const r = await api("POST", "/api/v1/profiles", text, {
    type: "text/plain",
    params: { service, type, unit: "samples", period_ns: 10_000_000, start: start / S, duration_s: 60, ...extra },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
}

/** Starts the server and the browser; seed(env) runs between the two. */
export async function start(seed) {
  assert.ok(existsSync(BIN), `${BIN} missing: run make`);
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: run scripts/install-deps.sh`);
  mkdirSync(SHOTS, { recursive: true });
  env.dataDir = mkdtempSync(join(tmpdir(), "rt-ui-"));
  const port = await freePort();
  env.base = `http://127.0.0.1:${port}`;
  env.server = spawn(BIN, ["serve", "--data", join(env.dataDir, "data"), "--listen", `127.0.0.1:${port}`], {
    env: { ...process.env, ROOTTRACE_BOOTSTRAP_TOKEN: ADMIN }, stdio: ["ignore", "ignore", "pipe"],
  });
  env.server.stderr.on("data", (d) => appendFileSync(join(env.dataDir, "server.log"), d));
  for (let k = 0; k < 200; k++) {
    try { if ((await fetch(`${env.base}/healthz`)).ok) break; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  await seed?.(env);
  env.browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
}

export async function stop() {
  await env.browser?.close();
  if (env.server) {
    env.server.kill("SIGTERM");
    await new Promise((r) => env.server.once("exit", r));
  }
  rmSync(env.dataDir, { recursive: true, force: true });
}

/** A signed-in page (viewport width × 1000). */
export async function newPage(token = ADMIN, width = 1400) {
  const ctx = await env.browser.newContext({ viewport: { width, height: 1000 } });
  const page = await ctx.newPage();
  page.on("dialog", (d) => { env.dialogs.push(d.message()); void d.dismiss(); });
  page.on("console", (m) => { if (/Content.Security.Policy/i.test(m.text())) env.cspErrors.push(m.text()); });
  page.on("pageerror", (e) => env.cspErrors.push(`pageerror: ${e.message}`));
  await page.goto(env.base + "/");
  await page.fill("#token", token);
  await page.click("form.signin button[type=submit]");
  await page.waitForSelector("[data-testid=scope]");
  return page;
}

export async function shot(page, name, { fullPage = true } = {}) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
}

/** The same view at 1400 px and at 800 px: name.png (full page), name-first-screen.png (what
 * a 1400 × 1000 screen shows first) and name-800.png. */
export async function shots(page, name, ready) {
  await shot(page, name);
  await shot(page, `${name}-first-screen`, { fullPage: false });
  await page.setViewportSize({ width: 800, height: 1000 });
  await page.waitForTimeout(300); // the canvases redraw on resize
  await ready?.();
  await shot(page, `${name}-800`);
  await page.setViewportSize({ width: 1400, height: 1000 });
}

/** Opens hash and waits for selector in the view the router draws for it: the old view stays in
 * the page until the router's hashchange handler runs, which can be after goto returns, so it is
 * marked first (selector: one complex selector, inside the page's view; hash: not the current one). */
export async function ready(page, hash, selector) {
  await page.evaluate(() => document.querySelectorAll("#app > .view").forEach((v) => { v.dataset.old = "1"; }));
  await page.goto(`${env.base}/${hash}`);
  await page.waitForSelector(`#app > .view:not([data-old]) ${selector}`, { timeout: 30_000 });
}
