'use strict';
// What status() returns (docs/sdk/README.md, "One vocabulary"): the shared fields in order,
// each with its real value before start(), while profiling against the fake control plane,
// in error states and after stop(); and the deprecated conversion to the status string.

const test = require('node:test');
const assert = require('node:assert');
const rt = require('..');
const { Profiler } = require('../lib/profiler');
const { Status, isValidStatus } = require('../lib/status');
const { startFake, defaultConfig, spySessions, until, burnNamed, KEY } = require(
  '../test_support/fake_control_plane',
);

const FIELDS = [
  'status',
  'state',
  'reason',
  'interval_us',
  'service',
  'instance',
  'profiles_sent',
  'profiles_dropped',
  'profiles_queued',
  'samples',
  'last_error',
];

/**
 * A config polled every 5 s: a loaded machine (the suite runs under nice beside other work)
 * can starve the loop for the 3 s that would turn a 1 s poll interval stale and cut the
 * profile these tests count; 15 s it does not.
 */
function config(over) {
  return defaultConfig({ poll_interval_s: 5, ...over });
}

/** A started Profiler for service shop, its sessions spied on (fake_control_plane.js). */
function makeProfiler(cp, spy, instance) {
  const opts = { server: cp.url, key: KEY, service: 'shop', instance, _createSession: spy.create };
  return new Profiler(opts).start();
}

/** The samples (V8 ticks: values[0], `samples/count`) in the uploaded profiles. */
function uploadedSamples(cp) {
  let n = 0;
  for (const u of cp.uploads) for (const s of u.profile.samples) n += Number(s.values[0]);
  return n;
}

/** Checks the shape and returns a plain copy of s (its own fields). */
function plain(s) {
  assert.ok(s instanceof Status);
  assert.ok(Object.isFrozen(s));
  assert.deepStrictEqual(Object.keys(s), FIELDS);
  assert.ok(isValidStatus(s.status), s.status);
  return { ...s };
}

test('before start(): disabled: not started, the defaults, nothing counted', () => {
  assert.deepStrictEqual(plain(rt.status()), {
    status: 'disabled: not started',
    state: 'disabled',
    reason: 'not started',
    interval_us: 10000,
    service: null,
    instance: null,
    profiles_sent: 0,
    profiles_dropped: 0,
    profiles_queued: 0,
    samples: 0,
    last_error: null,
  });
});

test('it converts to the status string (deprecated); === needs .status or .state', () => {
  const s = rt.status();
  assert.strictEqual(typeof s, 'object');
  assert.strictEqual(`${s}`, 'disabled: not started');
  assert.strictEqual(String(s), 'disabled: not started');
  assert.strictEqual(s.toString(), 'disabled: not started');
  assert.strictEqual(s + '', 'disabled: not started');
  assert.ok(s == 'disabled: not started'); // eslint-disable-line eqeqeq
  assert.ok(!(s != 'disabled: not started')); // eslint-disable-line eqeqeq
  assert.ok(s != 'disabled'); // eslint-disable-line eqeqeq
  assert.notStrictEqual(s, 'disabled: not started');
  assert.strictEqual(s.status, 'disabled: not started');
  assert.strictEqual(s.state, 'disabled');
  // JSON has the fields, not the string.
  assert.deepStrictEqual(JSON.parse(JSON.stringify(s)), { ...s });
  // Frozen: a field cannot be changed (this file is strict mode).
  assert.throws(() => {
    s.state = 'profiling';
  }, TypeError);
  assert.strictEqual(s.state, 'disabled');
});

test('bad options: error state, reason and last_error say why, no names in use', async () => {
  const p = rt.start({ server: 'http://127.0.0.1:9', key: '', service: 'shop' });
  assert.strictEqual(rt.status().status, p.status().status);
  assert.deepStrictEqual(plain(rt.status()), {
    status: 'error: option key is missing',
    state: 'error',
    reason: 'option key is missing',
    interval_us: 10000,
    service: null,
    instance: null,
    profiles_sent: 0,
    profiles_dropped: 0,
    profiles_queued: 0,
    samples: 0,
    last_error: 'option key is missing',
  });
  await p.stop();
});

test('start() throwing inside: error: start failed, in reason and last_error', async () => {
  const opts = {
    get server() {
      throw new Error('boom');
    },
  };
  const p = rt.start(opts);
  const s = plain(rt.status());
  assert.strictEqual(s.status, 'error: start failed: boom');
  assert.strictEqual(s.state, 'error');
  assert.strictEqual(s.reason, 'start failed: boom');
  assert.strictEqual(s.last_error, 'start failed: boom');
  assert.strictEqual(s.service, null);
  await p.stop();
});

test('profiling (fake control plane): every field, before and after uploads', async (t) => {
  const cp = await startFake(config({ sampling_interval_us: 2000 }));
  t.after(() => cp.close());
  const p = rt.start({ server: cp.url, key: KEY, service: 'shop', instance: 'status-1' });
  assert.strictEqual(rt.status().state, 'waiting');
  assert.strictEqual(rt.status().reason, 'no config yet');
  assert.ok(await until(() => rt.status().state === 'profiling', 10000), rt.status().status);
  const fields = {
    status: 'profiling',
    state: 'profiling',
    reason: '',
    interval_us: 2000,
    service: 'shop',
    instance: 'status-1',
    profiles_sent: 0,
    profiles_dropped: 0,
    profiles_queued: 0,
    samples: 0,
    last_error: null,
  };
  assert.deepStrictEqual(plain(rt.status()), fields);
  await burnNamed(400);
  // A new sampling interval ends the running profile now, which uploads it.
  cp.setConfig(config({ sampling_interval_us: 4000 }));
  assert.ok(await until(() => rt.status().profiles_sent === 1, 10000), JSON.stringify(rt.status()));
  assert.strictEqual(cp.uploads.length, 1);
  const first = plain(rt.status());
  assert.ok(first.samples > 0, `${first.samples} samples`);
  assert.deepStrictEqual(first, {
    ...fields,
    interval_us: 4000, // the effective interval: the running profile's
    profiles_sent: 1,
    samples: uploadedSamples(cp),
  });
  // The status every poll sends is the status field.
  assert.ok(await until(() => cp.polls[cp.polls.length - 1].query.interval_us === '4000', 10000));
  assert.strictEqual(cp.polls[cp.polls.length - 1].query.status, first.status);
  await burnNamed(300);
  await p.stop();
  assert.strictEqual(cp.uploads.length, 2);
  const after = plain(rt.status());
  assert.ok(after.samples > first.samples, `${after.samples} samples after ${first.samples}`);
  assert.deepStrictEqual(after, {
    ...fields,
    status: 'disabled: stopped',
    state: 'disabled',
    reason: 'stopped',
    interval_us: 4000,
    profiles_sent: 2,
    samples: uploadedSamples(cp),
  });
});

test('an invalid config: error state, reason and last_error carry why', async (t) => {
  const cp = await startFake(config());
  t.after(() => cp.close());
  const spy = spySessions();
  const p = makeProfiler(cp, spy, 'bad-1');
  assert.ok(await until(() => spy.active === 1, 10000));
  cp.setConfig(config({ sampling_interval_us: 'fast' }));
  assert.ok(await until(() => p.status().state === 'error', 10000), p.statusText());
  assert.deepStrictEqual(plain(p.status()), {
    status: 'error: invalid config: sampling_interval_us is not a number',
    state: 'error',
    reason: 'invalid config: sampling_interval_us is not a number',
    interval_us: 10000, // the last valid config's
    service: 'shop',
    instance: 'bad-1',
    profiles_sent: 0,
    profiles_dropped: 0, // the profile cut by the invalid config was never made
    profiles_queued: 0,
    samples: 0,
    last_error: 'invalid config: sampling_interval_us is not a number',
  });
  assert.strictEqual(spy.active, 0);
  await p.stop();
});

test('three poll intervals of 500s: error state; last_error is the poll error', async (t) => {
  const cp = await startFake(defaultConfig());
  t.after(() => cp.close());
  const spy = spySessions();
  const p = makeProfiler(cp, spy, 'stale-1');
  assert.ok(await until(() => spy.active === 1, 10000));
  cp.hostile = (req, res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"error":"internal","message":"boom"}');
  };
  assert.ok(await until(() => p.status().state === 'error', 15000), p.statusText());
  const s = plain(p.status());
  const why = 'no valid config for 3 poll intervals (config poll answered HTTP 500: boom)';
  assert.strictEqual(s.status, `error: ${why}`);
  assert.strictEqual(s.reason, why);
  assert.strictEqual(s.last_error, 'config poll answered HTTP 500: boom');
  assert.strictEqual(s.interval_us, 10000);
  await p.stop();
});

test('an upload refused (400): counted dropped, last_error says so', async (t) => {
  const cp = await startFake(config());
  t.after(() => cp.close());
  const spy = spySessions();
  const p = makeProfiler(cp, spy, 'up-1');
  assert.ok(await until(() => spy.active === 1, 10000));
  cp.uploadStatus = 400;
  await burnNamed(200);
  cp.setConfig(config({ sampling_interval_us: 20000 })); // ends and uploads the profile
  assert.ok(await until(() => p.status().profiles_dropped === 1, 10000), p.statusText());
  const s = plain(p.status());
  assert.strictEqual(cp.uploads.length, 1);
  assert.strictEqual(s.state, 'profiling');
  assert.strictEqual(s.profiles_sent, 0);
  assert.strictEqual(s.profiles_queued, 0);
  assert.strictEqual(s.samples, uploadedSamples(cp)); // made, and sent, though not stored
  assert.strictEqual(s.last_error, 'upload refused: HTTP 400');
  await p.stop();
});

test('uploads failing (500) at stop(): the profile left queued counts as dropped', async (t) => {
  const cp = await startFake(config());
  t.after(() => cp.close());
  const spy = spySessions();
  const p = makeProfiler(cp, spy, 'up-2');
  assert.ok(await until(() => spy.active === 1, 10000));
  cp.uploadStatus = 500;
  await burnNamed(200);
  await p.stop();
  assert.strictEqual(cp.uploads.length, 1, 'one try: at exit a failed upload is not retried');
  const s = plain(p.status());
  assert.strictEqual(s.status, 'disabled: stopped');
  assert.strictEqual(s.profiles_sent, 0);
  assert.strictEqual(s.profiles_dropped, 1);
  assert.strictEqual(s.profiles_queued, 0);
  assert.strictEqual(s.samples, uploadedSamples(cp));
  assert.strictEqual(s.last_error, 'upload failed: HTTP 500');
});
