'use strict';
// Frame naming (DESIGN §3), timeDeltas weighting on synthetic Profiles (DESIGN §2), and the
// real V8 sampler: interval, CPU accounting, per-profile sessions.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const inspector = require('node:inspector');
const { pathToFileURL } = require('node:url');
const {
  Sampler,
  DeclinedError,
  aggregate,
  frameNamer,
  moduleOf,
  findAppRoot,
  threadCpuNs,
} = require('../lib/sampler');

// ---- app root ----

test('findAppRoot: nearest package.json above the main script', () => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rt-root-')));
  fs.mkdirSync(path.join(dir, 'app', 'src', 'deep'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'app', 'package.json'), '{}');
  fs.writeFileSync(path.join(dir, 'app', 'src', 'deep', 'main.js'), '');
  assert.strictEqual(findAppRoot(path.join(dir, 'app', 'src', 'deep', 'main.js')), path.join(dir, 'app'));
  // A package.json next to the script wins over one further up.
  fs.writeFileSync(path.join(dir, 'app', 'src', 'package.json'), '{}');
  assert.strictEqual(findAppRoot(path.join(dir, 'app', 'src', 'deep', 'main.js')), path.join(dir, 'app', 'src'));
  // A directory named package.json is not a package.json.
  fs.mkdirSync(path.join(dir, 'lone', 'package.json'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'lone', 'sub'));
  fs.writeFileSync(path.join(dir, 'lone', 'sub', 'x.js'), '');
  const r = findAppRoot(path.join(dir, 'lone', 'sub', 'x.js'));
  assert.notStrictEqual(r, path.join(dir, 'lone'), 'directory named package.json ignored');
  // Symlinked script: the root is found from the real path (V8 reports real paths).
  fs.symlinkSync(path.join(dir, 'app', 'src', 'deep', 'main.js'), path.join(dir, 'link.js'));
  assert.strictEqual(findAppRoot(path.join(dir, 'link.js')), path.join(dir, 'app', 'src'));
  fs.rmSync(dir, { recursive: true, force: true });
});

test('findAppRoot: without a main script, the working directory', () => {
  assert.strictEqual(findAppRoot(null), fs.realpathSync(process.cwd()));
});

// ---- module names ----

const ROOT = '/srv/shop';
const f = (p) => pathToFileURL(p).href;

const MODULE_CASES = [
  // [url, scriptId, expected module, why]
  [f('/srv/shop/src/pricing.js'), '81', 'src/pricing', 'relative to the root, extension dropped'],
  [f('/srv/shop/server.mjs'), '82', 'server', 'file at the root, .mjs dropped'],
  [f('/srv/shop/lib/a.b.cjs'), '83', 'lib/a.b', 'only the last extension dropped'],
  [f('/srv/shop/bin/.hidden'), '84', 'bin/.hidden', 'a dotfile keeps its name'],
  [f('/srv/shop/bin/cli'), '85', 'bin/cli', 'no extension'],
  [f('/srv/shop/node_modules/express/lib/router/index.js'), '90', 'express/lib/router/index', 'node_modules: package name on'],
  [f('/srv/shop/node_modules/@scope/pkg/dist/x.js'), '91', '@scope/pkg/dist/x', 'scoped package'],
  [f('/srv/shop/node_modules/a/node_modules/b/i.js'), '92', 'b/i', 'nested node_modules: innermost package'],
  [f('/usr/lib/node_modules/npm/lib/cli.js'), '93', 'npm/lib/cli', 'global node_modules outside the root'],
  [f('/opt/tools/helper.js'), '94', '/opt/tools/helper', 'outside the root: absolute path'],
  [f('/srv/shop-other/x.js'), '95', '/srv/shop-other/x', 'a sibling sharing the prefix is outside'],
  [f('/srv/shop/sp ace/ü.js'), '96', 'sp ace/ü', 'percent-encoded URL decoded'],
  ['/srv/shop/vm/script.js', '97', 'vm/script', 'plain absolute path (vm.Script filename)'],
  ['node:internal/timers', '10', 'node:internal/timers', 'node: built-in as is'],
  ['node:fs', '45', 'node:fs', 'node: built-in as is'],
  ['', '0', '(native)', 'V8 builtin or binding'],
  ['', '127', '(eval)', 'eval / new Function code'],
  ['wasm://wasm/abc123', '98', 'wasm://wasm/abc123', 'other URLs kept'],
  ['evalmachine.<anonymous>', '99', 'evalmachine.<anonymous>', 'vm default name kept'],
];

for (const [url, id, want, why] of MODULE_CASES) {
  test(`moduleOf ${JSON.stringify(url)}: ${why}`, () => {
    assert.strictEqual(moduleOf(url, id, ROOT), want);
  });
}

test('frameNamer: module.function, (anonymous), special frames kept', () => {
  const name = frameNamer(ROOT);
  const cf = (url, functionName, scriptId = '5') => ({ url, functionName, scriptId, lineNumber: 7, columnNumber: 3 });
  assert.strictEqual(name(cf(f('/srv/shop/src/pricing.js'), 'applyDiscount')), 'src/pricing.applyDiscount');
  assert.strictEqual(name(cf(f('/srv/shop/src/pricing.js'), '')), 'src/pricing.(anonymous)');
  assert.strictEqual(
    name(cf(f('/srv/shop/node_modules/express/lib/router/index.js'), 'handle')),
    'express/lib/router/index.handle',
  );
  assert.strictEqual(name(cf('node:internal/timers', 'listOnTimeout')), 'node:internal/timers.listOnTimeout');
  assert.strictEqual(name(cf('', '(garbage collector)', '0')), '(garbage collector)');
  assert.strictEqual(name(cf('', '(program)', '0')), '(program)');
  assert.strictEqual(name(cf('', 'open', '0')), '(native).open');
  assert.strictEqual(name(cf('', 'evalBusy', '127')), '(eval).evalBusy');
  // A script that names a function "(program)" is not the special frame.
  assert.strictEqual(name(cf(f('/srv/shop/x.js'), '(program)')), 'x.(program)');
  // No line numbers: two call sites of one function are one frame.
  assert.strictEqual(
    name({ url: f('/srv/shop/a.js'), functionName: 'g', scriptId: '3', lineNumber: 1 }),
    name({ url: f('/srv/shop/a.js'), functionName: 'g', scriptId: '3', lineNumber: 99 }),
  );
});

// ---- weighting ----

/** A V8-shaped Profile: nodes [{id, name, url?, children}], samples, timeDeltas. */
function synthetic(nodes, samples, timeDeltas) {
  return {
    nodes: nodes.map(([id, functionName, url, children]) => ({
      id,
      callFrame: { functionName, url: url || '', scriptId: url ? '7' : '0', lineNumber: -1, columnNumber: -1 },
      hitCount: 0,
      children,
    })),
    startTime: 1000,
    endTime: 1000 + timeDeltas.reduce((a, b) => a + b, 0),
    samples,
    timeDeltas,
  };
}

const APP = f('/srv/shop/src/app.js');
const TREE = [
  [1, '(root)', '', [2, 3, 4, 5]],
  [2, '(program)', '', []],
  [3, '(idle)', '', []],
  [4, '(garbage collector)', '', []],
  [5, 'main', APP, [6, 7]],
  [6, 'hot', APP, []],
  [7, 'hot', APP, []], // the same function at another line: V8 keeps a second node
];

test('aggregate: timeDeltas[i] weighs sample i, (idle) excluded, negatives clamped to 0', () => {
  const p = synthetic(TREE, [6, 6, 3, 5, 2, 4, 7, 3], [100, -50, 1000, 200, 10, 20, 300, 7000]);
  const got = aggregate(p, { nameOf: frameNamer(ROOT), maxDepth: 256 });
  assert.deepStrictEqual(got.samples, [
    // hot: samples 0 (100 µs), 1 (-50 -> 0), 6 (300 µs, node 7 merges with node 6)
    { stack: ['src/app.main', 'src/app.hot'], count: 3, value_ns: 400000 },
    { stack: ['src/app.main'], count: 1, value_ns: 200000 },
    { stack: ['(program)'], count: 1, value_ns: 10000 },
    { stack: ['(garbage collector)'], count: 1, value_ns: 20000 },
  ]);
  assert.strictEqual(got.idle, 2);
  assert.strictEqual(got.negative, 1);
  assert.strictEqual(got.total, 8);
  const cpuNs = got.samples.reduce((a, s) => a + s.value_ns, 0);
  assert.strictEqual(cpuNs, (100 + 200 + 10 + 20 + 300) * 1000, 'idle time (1000 + 7000 µs) is not CPU');
});

test('aggregate: an all-idle profile has no samples (an empty profile is still coverage)', () => {
  const p = synthetic(TREE, [3, 3, 3], [10000, 10000, 10000]);
  const got = aggregate(p, { nameOf: frameNamer(ROOT), maxDepth: 256 });
  assert.deepStrictEqual(got.samples, []);
  assert.strictEqual(got.idle, 3);
});

test('aggregate: missing timeDeltas / unknown node ids / non-numeric deltas do not throw', () => {
  const p = synthetic(TREE, [6, 99, 6], [5, 5, 5]);
  p.timeDeltas = [5, 'x'];
  const got = aggregate(p, { nameOf: frameNamer(ROOT), maxDepth: 256 });
  assert.deepStrictEqual(got.samples, [{ stack: ['src/app.main', 'src/app.hot'], count: 2, value_ns: 5000 }]);
  assert.deepStrictEqual(aggregate({ nodes: [] }, { nameOf: frameNamer(ROOT), maxDepth: 8 }).samples, []);
});

test('aggregate: stack depth clamped, keeping the leaf side', () => {
  const nodes = [[1, '(root)', '', [2]]];
  for (let i = 2; i <= 301; i++) nodes.push([i, `f${i}`, APP, i < 301 ? [i + 1] : []]);
  const p = synthetic(nodes, [301], [1000]);
  const got = aggregate(p, { nameOf: frameNamer(ROOT), maxDepth: 256 });
  const stack = got.samples[0].stack;
  assert.strictEqual(stack.length, 256);
  assert.strictEqual(stack[stack.length - 1], 'src/app.f301', 'leaf kept');
  assert.strictEqual(stack[0], 'src/app.f46', 'root side cut');
  const short = aggregate(p, { nameOf: frameNamer(ROOT), maxDepth: 3 });
  assert.deepStrictEqual(short.samples[0].stack, ['src/app.f299', 'src/app.f300', 'src/app.f301']);
});

test('aggregate: stacks that differ only below the depth limit merge', () => {
  const nodes = [
    [1, '(root)', '', [2, 3]],
    [2, 'a', APP, [4]],
    [3, 'b', APP, [5]],
    [4, 'leaf', APP, []],
    [5, 'leaf', APP, []],
  ];
  const got = aggregate(synthetic(nodes, [4, 5], [10, 20]), { nameOf: frameNamer(ROOT), maxDepth: 1 });
  assert.deepStrictEqual(got.samples, [{ stack: ['src/app.leaf'], count: 2, value_ns: 30000 }]);
});

// ---- the real V8 sampler ----

function burnNamedForSamplerTest(ms) {
  const end = Date.now() + ms;
  let x = 0;
  for (;;) {
    for (let i = 0; i < 20000; i++) x += Math.sqrt(x + i);
    if (Date.now() >= end) return x;
  }
}

test('real profile: the burning function is on top and CPU matches the thread accounting', async () => {
  const s = new Sampler({ createSession: () => new inspector.Session() });
  await s.begin(1000);
  assert.ok(s.running);
  const t0 = performance.now();
  burnNamedForSamplerTest(400);
  await new Promise((r) => setTimeout(r, 200)); // idle: must not count
  const wall = performance.now() - t0;
  const r = await s.end();
  assert.ok(!s.running);
  const root = findAppRoot(path.join(__dirname, 'x.js'));
  assert.strictEqual(root, path.resolve(__dirname, '..'));
  const agg = aggregate(r.profile, { nameOf: frameNamer(root), maxDepth: 256 });
  const self = new Map();
  for (const smp of agg.samples) {
    const leaf = smp.stack[smp.stack.length - 1];
    self.set(leaf, (self.get(leaf) || 0) + smp.value_ns);
  }
  const top = [...self].sort((a, b) => b[1] - a[1])[0];
  assert.strictEqual(top[0], 'test/sampler.test.burnNamedForSamplerTest');
  const burnMs = top[1] / 1e6;
  assert.ok(burnMs > 300 && burnMs < 480, `burn measured ${burnMs} ms of 400`);
  assert.ok(agg.idle > 50, `idle samples ${agg.idle}`);
  const cpuMs = [...self.values()].reduce((a, b) => a + b, 0) / 1e6;
  assert.ok(cpuMs < wall - 100, `sampled CPU ${cpuMs} ms excludes the idle part of ${wall} ms`);
  // Sampling interval honoured: median delta near 1 ms, never below the floor by much.
  assert.ok(agg.medianDeltaUs >= 900 && agg.medianDeltaUs < 2500, `median delta ${agg.medianDeltaUs} µs`);
  assert.strictEqual(r.intervalUs, 1000);
  assert.ok(r.durationNanos > 550e6 && r.durationNanos < 2e9, `duration ${r.durationNanos}`);
  const nowNs = BigInt(Date.now()) * 1000000n;
  assert.ok(nowNs - r.timeNanos > 500000000n && nowNs - r.timeNanos < 5000000000n, 'time_nanos is Unix epoch');
  if (r.threadCpuNs != null) {
    // /proc ticks are 10 ms; allow for the SDK's own work on the thread.
    assert.ok(r.threadCpuNs >= 300e6 && r.threadCpuNs < 800e6, `thread cpu ${r.threadCpuNs}`);
  }
  assert.ok(r.processCpuNs >= r.threadCpuNs * 0.9 || r.threadCpuNs == null);
});

test('threadCpuNs reads the main thread from /proc (Linux)', { skip: !fs.existsSync('/proc/self/task') }, () => {
  // Burns until the process has used 150 ms of CPU (whatever the wall time on a loaded
  // host), then compares: the main thread's CPU is at most the process's and, the burn being
  // the process's only work, most of it. /proc counts in clock ticks (10 ms), hence the slack.
  const a = threadCpuNs();
  const p0 = process.cpuUsage();
  let used = 0;
  while (used < 150e3) {
    burnNamedForSamplerTest(5);
    const d = process.cpuUsage(p0);
    used = d.user + d.system; // µs
  }
  const b = threadCpuNs();
  const procNs = used * 1000;
  assert.ok(Number.isInteger(a) && Number.isInteger(b));
  assert.ok(b - a <= procNs + 20e6, `thread ${b - a} ns > process ${procNs} ns`);
  assert.ok(b - a >= 0.7 * procNs - 20e6, `thread ${b - a} ns, process ${procNs} ns`);
});

test('each profile gets its own session, disposed at the end (no long-lived profiler)', async () => {
  const made = [];
  const s = new Sampler({
    createSession: () => {
      const sess = new inspector.Session();
      const log = [];
      const post = sess.post.bind(sess);
      sess.post = (m, p, cb) => (log.push(m), post(m, p, cb));
      const disconnect = sess.disconnect.bind(sess);
      sess.disconnect = () => (log.push('disconnect'), disconnect());
      made.push(log);
      return sess;
    },
  });
  for (let i = 0; i < 3; i++) {
    await s.begin(5000);
    await new Promise((r) => setTimeout(r, 20));
    await s.end();
  }
  assert.strictEqual(made.length, 3);
  for (const log of made) {
    assert.deepStrictEqual(log, [
      'Profiler.enable',
      'Profiler.setSamplingInterval',
      'Profiler.start',
      'Profiler.stop',
      'Profiler.disable',
      'disconnect',
    ]);
  }
  assert.strictEqual(await s.end(), null, 'end without a profile');
});

test('a profiler that refuses to start is declined, and the session is disposed', async () => {
  let disconnected = 0;
  const s = new Sampler({
    createSession: () => ({
      connect() {},
      disconnect() {
        disconnected++;
      },
      post(m, p, cb) {
        if (m === 'Profiler.start') return cb(new Error('Inspector error -32000: profiler already in use'));
        cb(null, {});
      },
    }),
  });
  await assert.rejects(s.begin(1000), DeclinedError);
  assert.ok(!s.running);
  assert.strictEqual(disconnected, 1);
});
