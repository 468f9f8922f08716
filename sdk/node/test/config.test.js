'use strict';
// Config clamps and validation against a table of hostile values (DESIGN §5), and the
// status grammar.

const test = require('node:test');
const assert = require('node:assert');
const config = require('../lib/config');
const { formatStatus, isValidStatus, cleanReason } = require('../lib/status');

const BASE = {
  enabled: true,
  type: 'cpu',
  sampling_interval_us: 10000,
  upload_interval_s: 60,
  max_stack_depth: 256,
  poll_interval_s: 10,
  etag: 'abc',
};

test('the compiled bounds are the documented ones, in one frozen LIMITS', () => {
  // docs/sdk/node.md, "Safety: clamps and failing closed", and docs/control-plane.md.
  // the bounds every SDK shares are checked against sdk/testdata/limits.json (limits.test.js);
  // these are the Node SDK's own
  const table = JSON.parse(require('node:fs').readFileSync(
    require('node:path').join(__dirname, '..', '..', 'testdata', 'limits.json'), 'utf8'));
  const own = Object.fromEntries(Object.entries(config.LIMITS).filter(
    ([k]) => !(k in table.shared) && !(k in { sampling_interval_min_us: 0 })));
  assert.deepStrictEqual(own, {
    config_max_bytes: 64 * 1024,
    etag_max_len: 256,
    wait_max_s: 30,
    poll_grace_ms: 10000,
    poll_min_gap_ms: 1000,
    stale_poll_intervals: 3,
  });
  assert.ok(Object.isFrozen(config.LIMITS));
  assert.throws(() => {
    config.LIMITS.sampling_interval_min_us = 1;
  }, TypeError);
  assert.strictEqual(config.LIMITS.sampling_interval_min_us, 1000);
});

test('a well-formed config passes unchanged', () => {
  const r = config.validateConfig(BASE);
  assert.ok(r.ok);
  assert.deepStrictEqual(r.config, BASE);
});

// [field, value sent, expected clamped value]
const CLAMPS = [
  ['sampling_interval_us', 0, 1000],
  ['sampling_interval_us', -5, 1000],
  ['sampling_interval_us', -1e308, 1000],
  ['sampling_interval_us', 1, 1000],
  ['sampling_interval_us', 999, 1000],
  ['sampling_interval_us', 1000, 1000],
  ['sampling_interval_us', 1500.4, 1500],
  ['sampling_interval_us', 1e12, 1000000],
  ['sampling_interval_us', Infinity, 1000000],
  ['sampling_interval_us', -Infinity, 1000],
  ['sampling_interval_us', Number.MAX_SAFE_INTEGER + 2, 1000000],
  ['upload_interval_s', 0, 10],
  ['upload_interval_s', 1, 10],
  ['upload_interval_s', -60, 10],
  ['upload_interval_s', 60, 60],
  ['upload_interval_s', 301, 300],
  ['upload_interval_s', 1e12, 300],
  ['max_stack_depth', 0, 1],
  ['max_stack_depth', -1, 1],
  ['max_stack_depth', 64, 64],
  ['max_stack_depth', 257, 256],
  ['max_stack_depth', 1e9, 256],
  ['poll_interval_s', 0, 1],
  ['poll_interval_s', 0.001, 1],
  ['poll_interval_s', -3, 1],
  ['poll_interval_s', 2.5, 2.5],
  ['poll_interval_s', 601, 600],
  ['poll_interval_s', 1e12, 600],
];

for (const [field, value, want] of CLAMPS) {
  test(`clamp: ${field} = ${value} -> ${want}`, () => {
    const r = config.validateConfig({ ...BASE, [field]: value });
    assert.ok(r.ok, r.reason);
    assert.strictEqual(r.config[field], want);
  });
}

// [description, config object] that must make the WHOLE config invalid
const INVALID = [
  ['NaN number', { ...BASE, sampling_interval_us: NaN }],
  ['"NaN" string', { ...BASE, sampling_interval_us: 'NaN' }],
  ['numeric string', { ...BASE, sampling_interval_us: '10000' }],
  ['null interval', { ...BASE, sampling_interval_us: null }],
  ['boolean interval', { ...BASE, sampling_interval_us: true }],
  ['array interval', { ...BASE, sampling_interval_us: [10000] }],
  ['object interval', { ...BASE, sampling_interval_us: { v: 1 } }],
  ['string upload interval', { ...BASE, upload_interval_s: '60' }],
  ['null depth', { ...BASE, max_stack_depth: null }],
  ['string poll interval', { ...BASE, poll_interval_s: 'soon' }],
  ['NaN poll interval', { ...BASE, poll_interval_s: NaN }],
  ['enabled as string', { ...BASE, enabled: 'true' }],
  ['enabled as number', { ...BASE, enabled: 1 }],
  ['enabled null', { ...BASE, enabled: null }],
  ['enabled missing', (({ enabled, ...rest }) => rest)(BASE)],
  ['type not a string', { ...BASE, type: 5 }],
  ['type null', { ...BASE, type: null }],
  ['etag not a string', { ...BASE, etag: 7 }],
  // An etag the server would refuse in every later poll's query (414 past ~32 KB).
  ['etag of 257 characters', { ...BASE, etag: 'a'.repeat(257) }],
  ['etag with a space', { ...BASE, etag: 'a b' }],
  ['etag not ASCII', { ...BASE, etag: 'café' }],
  ['top-level array', [BASE]],
  ['top-level null', null],
  ['top-level string', 'enabled'],
  ['top-level number', 42],
];

for (const [why, obj] of INVALID) {
  test(`invalid: ${why}`, () => {
    const r = config.validateConfig(obj);
    assert.strictEqual(r.ok, false);
    assert.ok(typeof r.reason === 'string' && r.reason.length > 0);
    assert.strictEqual(r.config, undefined, 'nothing of an invalid config is used');
  });
}

// Raw bodies: malformed JSON is invalid; JSON's own overflow (1e400) is a number, clamped.
const BODIES = [
  ['NaN token', '{"enabled":true,"sampling_interval_us":NaN}', false],
  ['bare NaN', 'NaN', false],
  ['Infinity token', '{"enabled":true,"sampling_interval_us":Infinity}', false],
  ['truncated', '{"enabled":true,"sampling_inter', false],
  ['empty', '', false],
  ['html', '<html>502 Bad Gateway</html>', false],
  ['BOM', '\ufeff{"enabled":true}', false],
  ['trailing garbage', '{"enabled":true} x', false],
  ['1e400 overflows to Infinity: clamped', '{"enabled":true,"sampling_interval_us":1e400}', true],
  ['-0', '{"enabled":true,"sampling_interval_us":-0}', true],
  ['minimal', '{"enabled":false}', true],
  ['unknown fields ignored', '{"enabled":true,"future":{"x":[1]}}', true],
];

for (const [why, body, ok] of BODIES) {
  test(`parseConfig: ${why} -> ${ok ? 'valid' : 'invalid'}`, () => {
    const r = config.parseConfig(Buffer.from(body, 'utf8'));
    assert.strictEqual(r.ok, ok, r.reason);
    if (ok) {
      assert.ok(r.config.sampling_interval_us >= config.LIMITS.sampling_interval_min_us);
      assert.ok(r.config.sampling_interval_us <= config.LIMITS.sampling_interval_max_us);
    }
  });
}

test('missing numeric fields take the Node defaults', () => {
  const r = config.parseConfig('{"enabled":true}');
  assert.ok(r.ok);
  assert.deepStrictEqual(r.config, {
    enabled: true,
    type: 'cpu',
    etag: null,
    sampling_interval_us: 10000,
    upload_interval_s: 60,
    max_stack_depth: 256,
    poll_interval_s: 10,
  });
});

test('type is a request, never malformed: wall and unknown types are accepted', () => {
  for (const type of ['wall', 'heap', '', 'x'.repeat(1000)]) {
    assert.ok(config.validateConfig({ ...BASE, type }).ok, type);
  }
});

test('every clamped config stays inside every bound (randomised hostile numbers)', () => {
  const nasty = [0, -0, -1, 1, 0.5, 1e-300, 1e300, -1e300, Infinity, -Infinity, 2 ** 31, 2 ** 53, -(2 ** 63)];
  for (let i = 0; i < 2000; i++) {
    const pick = () => (Math.random() < 0.5 ? nasty[i % nasty.length] : (Math.random() - 0.5) * 10 ** (Math.random() * 20));
    const r = config.validateConfig({
      enabled: true,
      sampling_interval_us: pick(),
      upload_interval_s: pick(),
      max_stack_depth: pick(),
      poll_interval_s: pick(),
    });
    assert.ok(r.ok);
    const c = r.config;
    assert.ok(c.sampling_interval_us >= 1000 && c.sampling_interval_us <= 1e6 && Number.isInteger(c.sampling_interval_us));
    assert.ok(c.upload_interval_s >= 10 && c.upload_interval_s <= 300);
    assert.ok(c.max_stack_depth >= 1 && c.max_stack_depth <= 256 && Number.isInteger(c.max_stack_depth));
    assert.ok(c.poll_interval_s >= 1 && c.poll_interval_s <= 600);
  }
});

// ---- status grammar ----

test('status strings follow `<state>[: <reason>]`', () => {
  assert.strictEqual(formatStatus('profiling'), 'profiling');
  assert.strictEqual(formatStatus('declined', 'V8 profiler in use'), 'declined: V8 profiler in use');
  assert.strictEqual(formatStatus('profiling', 'wall not supported, sending cpu'), 'profiling: wall not supported, sending cpu');
  assert.strictEqual(formatStatus('bogus', 'x'), 'error: x');
  const long = formatStatus('error', `invalid config: ${'é\n'.repeat(300)}`);
  assert.ok(isValidStatus(long), long);
  assert.ok(long.length <= 'error: '.length + 200);
  assert.strictEqual(cleanReason('a\u0000b\tc'), 'a?b?c');
  for (const s of ['profiling', 'disabled', 'waiting: no config yet', 'unavailable: not the main thread (worker)']) {
    assert.ok(isValidStatus(s), s);
  }
  assert.ok(!isValidStatus('running'));
  assert.ok(!isValidStatus('error: '));
});

test('an etag of 256 printable ASCII characters is kept', () => {
  const r = config.validateConfig({ ...BASE, etag: 'f'.repeat(256) });
  assert.ok(r.ok);
  assert.strictEqual(r.config.etag, 'f'.repeat(256));
});
