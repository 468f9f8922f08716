'use strict';
// The public API: start/stop/status, never throwing into the application, never keeping the
// process alive, and the main-thread-only rule.

const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const rt = require('..');
const { isValidStatus } = require('../lib/status');
const { defaultInstance } = require('../lib/profiler');

const INDEX = path.join(__dirname, '..', 'index.js');

test('status() before start() is "disabled: not started"', () => {
  assert.strictEqual(rt.status().status, 'disabled: not started');
});

test('bad options never throw: the profiler reports an error status', async () => {
  for (const opts of [undefined, null, {}, { server: 'ftp://x', key: 'k', service: 's' }, { server: 'http://127.0.0.1:9', key: '', service: 's' }, { server: 'http://127.0.0.1:9', key: 'k', service: '' }, { server: 'http://127.0.0.1:9', key: 'k', service: 's', version: 5 }]) {
    const p = rt.start(opts);
    assert.match(p.status().status, /^error: /, JSON.stringify(opts));
    assert.ok(isValidStatus(p.status().status));
    assert.strictEqual(rt.status().status, p.status().status);
    await p.stop();
  }
});

test('start() twice returns the running profiler; stop() is idempotent', async () => {
  const a = rt.start({ server: 'http://127.0.0.1:9', key: 'k', service: 'svc' });
  const b = rt.start({ server: 'http://127.0.0.1:9', key: 'k', service: 'other' });
  assert.strictEqual(a, b);
  assert.strictEqual(rt.status().status, 'waiting: no config yet');
  const s1 = a.stop();
  assert.strictEqual(a.stop(), s1);
  await s1;
  await rt.stop();
});

test('instance id is <hostname>-<pid>-<4 hex>', () => {
  const id = defaultInstance();
  const os = require('node:os');
  assert.ok(id.startsWith(`${os.hostname()}-${process.pid}-`), id);
  assert.match(id, /-[0-9a-f]{4}$/);
  assert.notStrictEqual(defaultInstance(), defaultInstance());
});

test('in a worker thread the SDK is unavailable (it profiles the main thread only)', async () => {
  const w = new Worker(
    `const rt = require(${JSON.stringify(INDEX)});
     const p = rt.start({ server: 'http://127.0.0.1:9', key: 'k', service: 'w' });
     require('node:worker_threads').parentPort.postMessage(p.status().status);
     p.stop();`,
    { eval: true },
  );
  const status = await new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  assert.strictEqual(status, 'unavailable: not the main thread (worker)');
  await w.terminate();
});

test('the SDK never keeps the process alive (a poll held forever, or the server unreachable)', async (t) => {
  const { spawn } = require('node:child_process');
  const net = require('node:net');
  const held = [];
  const srv = net.createServer((s) => held.push(s)); // accepts and never answers
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => {
    for (const s of held) s.destroy();
    srv.close();
  });
  for (const server of [`http://127.0.0.1:${srv.address().port}`, 'http://127.0.0.1:9']) {
    const script = `require(${JSON.stringify(INDEX)}).start({ server: ${JSON.stringify(server)}, key: 'k', service: 'exit' });
      setTimeout(() => {}, 300); // the application's own last work`;
    const t0 = Date.now();
    const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
    const code = await new Promise((r) => child.once('exit', r));
    const took = Date.now() - t0;
    assert.strictEqual(code, 0);
    assert.ok(took < 3000, `${server}: exited after ${took} ms`);
  }
  assert.ok(held.length >= 1, 'the poll reached the silent server');
});

test('a process with --cpu-prof declines: V8 profiler in use', async () => {
  const script = `
    const http = require('node:http');
    let etag = 0;
    const srv = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ enabled: true, poll_interval_s: 1, etag: 'a' }));
    });
    srv.listen(0, '127.0.0.1', () => {
      const rt = require(${JSON.stringify(INDEX)});
      const p = rt.start({ server: 'http://127.0.0.1:' + srv.address().port, key: 'k', service: 'cpuprof' });
      setTimeout(async () => { console.log(p.status().status); await p.stop(); srv.close(); }, 700);
    });`;
  const dir = require('node:fs').mkdtempSync(path.join(require('node:os').tmpdir(), 'rt-cpuprof-'));
  const r = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '-e', script], { timeout: 15000 });
  require('node:fs').rmSync(dir, { recursive: true, force: true });
  assert.strictEqual(String(r.stdout).trim(), 'declined: V8 profiler in use', String(r.stderr));
});
