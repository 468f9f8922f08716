'use strict';
// A hostile control plane (DESIGN §5: "a spoofed control plane cannot make it spin"). For
// each attack, measure the sampling interval V8 is actually given and achieves (never under
// the 1 ms floor), the poll rate, and that profiling is off where DESIGN §5 says.

const test = require('node:test');
const { describe } = test;
const assert = require('node:assert');
const { Profiler } = require('../lib/profiler');
const config = require('../lib/config');
const { startFake, defaultConfig, spySessions, sleep, until, burnNamed, KEY } = require('../test_support/fake_control_plane');

function makeProfiler(cp, spy) {
  return new Profiler({ server: cp.url, key: KEY, service: 'hostile', instance: 'h1', _createSession: spy.create }).start();
}

/** Samples per second of CPU in an uploaded profile (idle excluded, so burn meanwhile). */
function sampleRate(upload) {
  const n = upload.profile.samples.reduce((a, s) => a + Number(s.values[0]), 0);
  return n / (Number(upload.profile.durationNanos) / 1e9);
}

// ---- hostile sampling intervals: clamped, measured on a real profile ----

describe('hostile sampling intervals are clamped and measured', () => {
  const CASES = [
    // [value sent, interval V8 must get (µs), what it looks like]
    [0, 1000, 'interval 0'],
    [-250, 1000, 'negative interval'],
    [1, 1000, '1 µs'],
    [1e12, 1000000, '1e12 µs'],
  ];
  for (const [sent, want, why] of CASES) {
    test(`${why}: setSamplingInterval(${want}) and the real sample rate respects it`, async (t) => {
      const cp = await startFake(defaultConfig({ sampling_interval_us: sent }));
      t.after(() => cp.close());
      const spy = spySessions();
      const p = makeProfiler(cp, spy);
      assert.ok(await until(() => spy.active === 1, 1500), 'profiling starts (a clamped config is valid)');
      assert.deepStrictEqual(spy.intervals, [want]);
      await burnNamed(1200);
      assert.ok(await until(() => cp.polls.length >= 2, 1500));
      assert.strictEqual(cp.polls[cp.polls.length - 1].query.interval_us, String(want), 'status carries the effective interval');
      await p.stop();
      assert.strictEqual(cp.uploads.length, 1);
      const u = cp.uploads[0];
      assert.strictEqual(u.profile.period, BigInt(want * 1000));
      const rate = sampleRate(u);
      const seconds = Number(u.profile.durationNanos) / 1e9;
      const count = u.profile.samples.reduce((a, s) => a + Number(s.values[0]), 0);
      const ceiling = ((seconds * 1e6) / want) * 1.15 + 2; // samples the interval allows, with slack
      assert.ok(count <= ceiling, `${count} samples in ${seconds} s > ${ceiling.toFixed(1)} for ${want} µs`);
      if (want === 1000) assert.ok(rate > 300, `${rate.toFixed(1)} samples/s: the profiler ran`);
      t.diagnostic(`${why}: V8 interval ${want} µs, measured ${rate.toFixed(1)} CPU samples/s`);
    });
  }
});

// ---- hostile answers ----

/**
 * Serves a valid enabled config with poll 1 s, then switches to `attack` for every poll. A
 * held poll already in flight still ends honestly (up to 1 s later), so "3 poll intervals
 * without a valid config" ends at most ~4 s after the switch.
 */
async function underAttack(t, attack, { expectOff, offWithinMs, stale, maxRate = 1.6, observeMs = 5000 }) {
  const cp = await startFake(defaultConfig({ poll_interval_s: 1 }));
  t.after(() => cp.close());
  const spy = spySessions();
  const p = makeProfiler(cp, spy);
  assert.ok(await until(() => spy.active === 1, 1500), 'profiling on before the attack');
  await sleep(200);
  const before = cp.polls.length;
  const t0 = performance.now();
  cp.hostile = attack;
  let offAt = null;
  let offStatus = null; // the status as profiling went off: later, 3 poll intervals without
  // a valid config replace it with the generic "no valid config for 3 poll intervals"
  let lastOn = null;
  while (performance.now() - t0 < observeMs) {
    if (spy.active === 0 && offAt === null) {
      offAt = performance.now() - t0;
      offStatus = p.statusText();
    }
    if (offAt === null) lastOn = performance.now();
    await sleep(25);
  }
  const polls = cp.polls.length - before;
  const rate = polls / (observeMs / 1000);
  const interval = Math.min(...spy.intervals);
  t.diagnostic(`off after ${offAt === null ? 'never' : offAt.toFixed(0) + ' ms'}; ${polls} polls in ${observeMs} ms; min V8 interval ${interval} µs; status "${p.statusText()}"`);
  assert.ok(interval >= config.LIMITS.sampling_interval_min_us, `V8 interval ${interval} µs`);
  assert.ok(rate <= maxRate, `${rate} polls/s at a 1 s poll interval`);
  if (expectOff) {
    assert.notStrictEqual(offAt, null, 'profiling must be off');
    if (stale) {
      // Off 3 poll intervals (3 s) after the last valid answer: not sooner, and not much later.
      const sinceValid = t0 + offAt - cp.lastHonestAt;
      t.diagnostic(`off ${sinceValid.toFixed(0)} ms after the last valid config`);
      assert.ok(lastOn - cp.lastHonestAt >= 2900, `still on ${lastOn - cp.lastHonestAt} ms after the last valid config`);
      assert.ok(sinceValid <= 4000, `off ${sinceValid} ms after the last valid config`);
    } else {
      assert.ok(offAt <= offWithinMs, `off after ${offAt} ms, expected within ${offWithinMs} ms`);
    }
    assert.strictEqual(spy.active, 0);
  } else {
    assert.strictEqual(spy.active, 1, 'profiling stays on');
  }
  const stopped = performance.now();
  await p.stop();
  assert.ok(performance.now() - stopped < 5500, 'stop() within 5 s');
  return { p, cp, spy, offAt, offStatus };
}

const json = (obj) => (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', etag: '"bad"' });
  res.end(typeof obj === 'string' ? obj : JSON.stringify(obj));
};

describe('hostile control plane answers', { concurrency: true }, () => {
  test('sampling interval "NaN" (a string): invalid config, off at once', async (t) => {
    const { offStatus } = await underAttack(t, json({ ...defaultConfig(), sampling_interval_us: 'NaN', etag: 'x' }), {
      expectOff: true,
      offWithinMs: 1500,
    });
    assert.match(offStatus, /^error: invalid config: sampling_interval_us is not a number/);
  });

  test('sampling interval NaN (a non-JSON token): malformed, off at once', async (t) => {
    const body = '{"enabled":true,"type":"cpu","sampling_interval_us":NaN,"upload_interval_s":60,"max_stack_depth":256,"poll_interval_s":1,"etag":"x"}';
    const { offStatus } = await underAttack(t, json(body), { expectOff: true, offWithinMs: 1500 });
    assert.match(offStatus, /^error: invalid config: malformed JSON/);
  });

  test('sampling interval as a string "1": invalid, off at once', async (t) => {
    await underAttack(t, json({ ...defaultConfig(), sampling_interval_us: '1', etag: 'x' }), {
      expectOff: true,
      offWithinMs: 1500,
    });
  });

  test('poll interval 0: clamped to 1 s, no spinning', async (t) => {
    await underAttack(t, json({ ...defaultConfig(), poll_interval_s: 0, etag: 'x' }), { expectOff: false, maxRate: 1.4 });
  });

  test('poll interval -1e9 with a fresh etag every time: still one poll a second', async (t) => {
    let n = 0;
    await underAttack(
      t,
      (req, res) => json({ ...defaultConfig(), poll_interval_s: -1e9, etag: `x${n++}` })(req, res),
      { expectOff: false, maxRate: 1.4 },
    );
  });

  test('a 50 MB body: abandoned after 64 KiB, invalid, off at once', async (t) => {
    const rssBefore = process.memoryUsage().rss;
    const sent = [];
    const queries = [];
    const { offStatus } = await underAttack(
      t,
      (req, res, query) => {
        queries.push(query);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(50 * 1024 * 1024) });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        let written = 0;
        sent.push(() => written);
        res.on('error', () => {});
        const write = () => {
          while (written < 50 * 1024 * 1024 && !res.destroyed) {
            written += chunk.length;
            if (!res.write(chunk)) return res.once('drain', write);
          }
          res.end();
        };
        write();
      },
      { expectOff: true, offWithinMs: 1500 },
    );
    assert.match(offStatus, /^error: invalid config: config body over 65536 bytes/);
    // An invalid config forgets the etag: every poll after the first big body asks afresh.
    assert.ok(queries.length >= 2, `${queries.length} polls`);
    assert.strictEqual(queries[0].etag, 'e1');
    for (const q of queries.slice(1)) assert.strictEqual(q.etag, undefined, JSON.stringify(q));
    const grewMb = (process.memoryUsage().rss - rssBefore) / 1048576;
    const most = Math.max(...sent.map((w) => w()));
    t.diagnostic(`at most ${(most / 1048576).toFixed(2)} MB of a 50 MB body left the server (socket buffers included); rss of the whole test process grew ${grewMb.toFixed(1)} MB`);
    assert.ok(most < 16 * 1048576, `the SDK kept reading: ${most} bytes sent`);
  });

  test('a slow drip (1 byte every 300 ms): off after 3 poll intervals', async (t) => {
    const { p } = await underAttack(
      t,
      (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const body = JSON.stringify({ ...defaultConfig(), etag: 'drip' });
        let i = 0;
        const tick = setInterval(() => {
          if (res.destroyed || i >= body.length) return clearInterval(tick);
          res.write(body[i++]);
        }, 300);
        res.on('close', () => clearInterval(tick));
      },
      { expectOff: true, stale: true },
    );
    // The dripping poll is still in flight (it is abandoned 10 s after its wait): no poll
    // error to show yet.
    assert.strictEqual(p.statusText(), 'error: no valid config for 3 poll intervals');
  });

  test('HTTP 500 on every poll: off after 3 poll intervals', async (t) => {
    await underAttack(
      t,
      (req, res) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":"internal","message":"boom"}');
      },
      { expectOff: true, stale: true },
    );
  });

  test('a TCP reset on every poll: off after 3 poll intervals', async (t) => {
    await underAttack(
      t,
      (req) => {
        const s = req.socket;
        if (typeof s.resetAndDestroy === 'function') s.resetAndDestroy();
        else s.destroy();
      },
      { expectOff: true, stale: true },
    );
  });

  test('no answer at all: off after 3 poll intervals, one request in flight at a time', async (t) => {
    const { cp } = await underAttack(t, () => {}, { expectOff: true, stale: true, maxRate: 0.5 });
    assert.ok(cp.polls.length <= 4);
  });

  test('enabled as "true" (a string): invalid, off at once', async (t) => {
    await underAttack(t, json({ ...defaultConfig(), enabled: 'true', etag: 'x' }), { expectOff: true, offWithinMs: 1500 });
  });

  test('a JSON array body: invalid, off at once', async (t) => {
    await underAttack(t, json([defaultConfig()]), { expectOff: true, offWithinMs: 1500 });
  });

  test('304 with no prior etag-matching config is harmless; 302 redirects are not followed', async (t) => {
    await underAttack(
      t,
      (req, res) => {
        res.writeHead(302, { location: 'http://127.0.0.1:1/' });
        res.end();
      },
      { expectOff: true, stale: true },
    );
  });
});
