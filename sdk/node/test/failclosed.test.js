'use strict';
// The fail-closed state machine (DESIGN §5) against a fake control plane on 127.0.0.1:
// profiling only after a valid enabled config; off on enabled:false, an invalid config, a
// 409, and three poll intervals without a valid config; the poll rate limits.

const test = require('node:test');
const assert = require('node:assert');
const { Profiler } = require('../lib/profiler');
const { isValidStatus } = require('../lib/status');
const { startFake, defaultConfig, spySessions, sleep, until, burnNamed, KEY } = require('../test_support/fake_control_plane');

function makeProfiler(cp, spy, extra) {
  return new Profiler({
    server: cp.url,
    key: KEY,
    service: 'shop',
    version: '1.2.3',
    instance: 'test-instance',
    _createSession: spy.create,
    ...extra,
  }).start();
}

const lastStatus = (cp) => cp.polls[cp.polls.length - 1].query.status;

test('off by default: a config with enabled:false never starts the profiler', async (t) => {
  const cp = await startFake(defaultConfig({ enabled: false }));
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  await sleep(2500);
  assert.strictEqual(spy.starts, 0);
  assert.strictEqual(p.statusText(), 'disabled');
  assert.ok(cp.polls.length >= 2);
  const q = cp.polls[0].query;
  assert.strictEqual(q.service, 'shop');
  assert.strictEqual(q.instance, 'test-instance');
  assert.strictEqual(q.runtime, 'node');
  assert.strictEqual(q.runtime_version, process.version);
  assert.strictEqual(q.version, '1.2.3');
  assert.match(q.sdk_version, /^\d+\.\d+\.\d+/);
  assert.strictEqual(q.status, 'waiting: no config yet');
  assert.strictEqual(q.interval_us, '10000');
  assert.strictEqual(q.wait, '0', 'first poll (no etag) does not ask to be held');
  assert.strictEqual(cp.polls[1].query.status, 'disabled');
  assert.strictEqual(cp.polls[1].query.etag, 'e1');
  assert.strictEqual(cp.polls[1].query.wait, '1', 'held for the poll interval');
  for (const poll of cp.polls) assert.ok(isValidStatus(poll.query.status), poll.query.status);
  await p.stop();
});

test('nothing before a valid config: a server answering 500 never turns profiling on', async (t) => {
  const cp = await startFake();
  cp.hostile = (req, res) => {
    res.writeHead(500);
    res.end('boom');
  };
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  await sleep(1500);
  assert.strictEqual(spy.starts, 0);
  assert.strictEqual(p.statusText(), 'waiting: no config yet (config poll answered HTTP 500)');
  assert.strictEqual(cp.polls.length, 1, 'before any config the poll interval is the default 10 s');
  await p.stop();
});

test('toggle: on, off within a second of the change, on again; status reported', async (t) => {
  const cp = await startFake(defaultConfig({ enabled: true }));
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  assert.ok(await until(() => spy.active === 1, 1000), 'profiling starts on enabled:true');
  assert.strictEqual(p.statusText(), 'profiling');
  assert.deepStrictEqual(spy.intervals, [10000]);
  await sleep(1200); // a held poll is in flight with the current etag
  assert.ok(await until(() => lastStatus(cp) === 'profiling', 1500));
  const t0 = performance.now();
  cp.setConfig(defaultConfig({ enabled: false }));
  assert.ok(await until(() => spy.active === 0, 1500), 'off after enabled:false');
  const tookMs = performance.now() - t0;
  assert.ok(tookMs < 1000, `turned off ${tookMs} ms after the toggle`);
  assert.strictEqual(p.statusText(), 'disabled');
  cp.setConfig(defaultConfig({ enabled: true, sampling_interval_us: 5000 }));
  assert.ok(await until(() => spy.active === 1, 2000), 'on again');
  assert.deepStrictEqual(spy.intervals, [10000, 5000]);
  assert.strictEqual(cp.uploads.length, 0, 'the profile cut by enabled:false is not uploaded');
  await p.stop();
  assert.strictEqual(spy.active, 0);
  assert.strictEqual(cp.uploads.length, 1, 'stop() uploads the last profile');
});

test('an invalid config stops profiling at once and says so', async (t) => {
  const cp = await startFake(defaultConfig());
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  assert.ok(await until(() => spy.active === 1, 1000));
  cp.setConfig({ ...defaultConfig(), sampling_interval_us: 'fast' });
  assert.ok(await until(() => spy.active === 0, 1500), 'off on an invalid config');
  assert.strictEqual(p.statusText(), 'error: invalid config: sampling_interval_us is not a number');
  // The invalid config is not a valid one: the SDK keeps asking (no etag: a full 200 each time).
  assert.ok(await until(() => lastStatus(cp).startsWith('error: invalid config'), 2500));
  cp.setConfig(defaultConfig());
  assert.ok(await until(() => spy.active === 1, 2500), 'a valid config brings it back');
  await p.stop();
});

test('409 on upload: the profile is dropped, profiling stops until a fresh enabled config', async (t) => {
  const cp = await startFake(defaultConfig());
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  assert.ok(await until(() => spy.active === 1, 1000));
  cp.uploadStatus = 409;
  // Changing the sampling interval ends the running profile now, which uploads it.
  cp.setConfig(defaultConfig({ sampling_interval_us: 20000, enabled: true }));
  assert.ok(await until(() => cp.uploads.length === 1, 2000), 'upload sent');
  assert.ok(await until(() => spy.active === 0, 1000), 'profiling stopped by the 409');
  assert.strictEqual(p.statusText(), 'disabled: upload refused (409)');
  await sleep(1500);
  assert.strictEqual(cp.uploads.length, 1, 'the refused profile is not retried');
  // The server turns the service off: a fresh 200 with enabled:false, still off.
  cp.setConfig(defaultConfig({ enabled: false }));
  await sleep(1500);
  assert.strictEqual(spy.active, 0);
  cp.uploadStatus = 201;
  cp.setConfig(defaultConfig({ enabled: true }));
  assert.ok(await until(() => spy.active === 1, 2500), 'on again after a fresh enabled:true');
  await p.stop();
});

test('three poll intervals without a valid config (500s) stop profiling', async (t) => {
  const cp = await startFake(defaultConfig());
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  assert.ok(await until(() => spy.active === 1, 1000));
  await sleep(1100);
  const t0 = performance.now();
  cp.hostile = (req, res) => {
    res.writeHead(500);
    res.end('{"error":"internal"}');
  };
  assert.ok(await until(() => spy.active === 0, 5000), 'off after 3 poll intervals');
  const offAfter = performance.now() - t0;
  assert.ok(offAfter > 1000 && offAfter < 4500, `off ${offAfter} ms after the server went bad`);
  assert.strictEqual(p.statusText(), 'error: no valid config for 3 poll intervals (config poll answered HTTP 500)');
  const pollsAtOff = cp.polls.length;
  await sleep(2000);
  const rate = (cp.polls.length - pollsAtOff) / 2;
  assert.ok(rate <= 1.5, `${rate} polls/s against a failing server (poll interval 1 s)`);
  cp.hostile = null;
  assert.ok(await until(() => spy.active === 1, 2500), 'back once a valid config arrives');
  await p.stop();
});

test('304s are valid configs: profiling stays on across many held polls', async (t) => {
  const cp = await startFake(defaultConfig());
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  assert.ok(await until(() => spy.active === 1, 1000));
  await sleep(4500);
  assert.strictEqual(spy.active, 1);
  assert.strictEqual(spy.starts, 1, 'one profile, never restarted');
  assert.strictEqual(p.statusText(), 'profiling');
  const n = cp.polls.length;
  assert.ok(n >= 4 && n <= 7, `${n} polls in ~4.5 s at a 1 s poll interval`);
  await p.stop();
});

test('poll rate: one request per poll interval; a change may be followed at once but not within 1 s', async (t) => {
  const cp = await startFake(defaultConfig({ poll_interval_s: 3 }));
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  await sleep(300);
  // A change every 100 ms: every held poll returns at once.
  const churn = setInterval(() => cp.setConfig(defaultConfig({ poll_interval_s: 3, upload_interval_s: 10 + (cp.gen % 50) })), 100);
  await sleep(3500);
  clearInterval(churn);
  const starts = cp.polls.map((x) => x.at);
  for (let i = 1; i < starts.length; i++) {
    assert.ok(starts[i] - starts[i - 1] >= 990, `polls ${i - 1} and ${i} ${starts[i] - starts[i - 1]} ms apart`);
  }
  assert.ok(starts.length <= 5, `${starts.length} polls in 3.8 s`);
  await p.stop();
});

test('type "wall" requested: profiles cpu and says so', async (t) => {
  const cp = await startFake(defaultConfig({ type: 'wall' }));
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  assert.ok(await until(() => spy.active === 1, 1000));
  assert.strictEqual(p.statusText(), 'profiling: wall not supported, sending cpu');
  await burnNamed(200);
  await p.stop();
  assert.strictEqual(cp.uploads.length, 1);
  assert.deepStrictEqual(cp.uploads[0].profile.sampleType, [['samples', 'count'], ['cpu', 'nanoseconds']]);
});

test('the uploaded profile carries the documented query parameters', async (t) => {
  const cp = await startFake(defaultConfig({ sampling_interval_us: 2000 }));
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  assert.ok(await until(() => spy.active === 1, 1000));
  await burnNamed(500);
  await p.stop();
  assert.strictEqual(cp.uploads.length, 1);
  const u = cp.uploads[0];
  assert.strictEqual(u.headers['content-type'], 'application/octet-stream');
  assert.strictEqual(u.query.service, 'shop');
  assert.strictEqual(u.query.instance, 'test-instance');
  assert.strictEqual(u.query.runtime, 'node');
  assert.strictEqual(u.query.runtime_version, process.version);
  assert.strictEqual(u.query.version, '1.2.3');
  assert.match(u.query.profile_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.match(u.query.process_cpu_ns, /^\d+$/);
  assert.match(u.query.thread_cpu_ns, /^\d+$/);
  assert.ok(Number(u.query.thread_cpu_ns) >= 300e6, `thread_cpu_ns ${u.query.thread_cpu_ns}`);
  const prof = u.profile;
  assert.strictEqual(prof.period, 2000000n);
  assert.deepStrictEqual(prof.periodType, ['cpu', 'nanoseconds']);
  assert.ok(prof.durationNanos > 400000000n);
  const names = new Set(prof.samples.map((s) => s.stack[s.stack.length - 1]));
  assert.ok(names.has('test_support/fake_control_plane.burnNamed'), [...names].join(', '));
  for (const s of prof.samples) assert.ok(!s.stack.includes('(idle)'));
});

test('a refused poll (4xx) forgets the etag, a 503 keeps it; once the refusal ends the next poll gets a full 200 at once', async (t) => {
  const cp = await startFake(defaultConfig());
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  t.after(() => cp.close());
  assert.ok(await until(() => spy.active === 1, 3000));
  // The next poll gets 503, every later one 401 (the key revoked) until the test restores it.
  const refused = []; // the queries of the polls answered here, in order
  cp.hostile = (req, res, query) => {
    res.writeHead(refused.length === 0 ? 503 : 401, { 'content-type': 'application/json' });
    res.end('{"error":"unauthorized","message":"key revoked"}');
    refused.push(query);
  };
  assert.ok(await until(() => spy.active === 0, 6000), 'off after 3 poll intervals without a valid config');
  assert.ok(await until(() => refused.length >= 3, 3000), `${refused.length} refused polls`);
  assert.match(p.statusText(), /^error: no valid config for 3 poll intervals \(config poll answered HTTP 401: key revoked\)$/);
  assert.strictEqual(cp.polls[0].query.etag, undefined);
  assert.strictEqual(refused[0].etag, 'e1', 'the poll answered 503 sends the etag of the 200');
  assert.strictEqual(refused[1].etag, 'e1', 'a 503 keeps the etag');
  assert.strictEqual(refused[1].wait, '1');
  for (const [i, q] of refused.entries()) {
    if (i < 2) continue;
    assert.strictEqual(q.etag, undefined, `refused poll ${i + 1}, after a 401, sends no etag`);
    assert.strictEqual(q.wait, '0', `refused poll ${i + 1} does not ask to be held`);
  }
  const n = cp.polls.length;
  cp.hostile = null; // the key is restored
  assert.ok(await until(() => spy.active === 1, 3000), 'profiling resumes after the 200');
  assert.strictEqual(cp.polls[n].query.etag, undefined, 'the first poll after the refusal sends no etag');
  assert.strictEqual(cp.polls[n].query.wait, '0');
  assert.strictEqual(p.statusText(), 'profiling');
  await p.stop();
});
