'use strict';
// The encoder against every wire vector of sdk/testdata (byte-exact, uncompressed), and gzip.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { encodeProfile, encodeWithin, gzip } = require('../lib/encoder');
const { decodeProfile } = require('../test_support/pprof');

const VECTORS = path.join(__dirname, '..', '..', 'testdata', 'vectors.json');

/** vectors.json with its big integers (time_nanos > 2^53) kept exact, as BigInt. */
function loadVectors() {
  const text = fs.readFileSync(VECTORS, 'utf8').replace(/("(?:time_nanos|duration_nanos)":\s*)(\d+)/g, '$1"$2"');
  const { vectors } = JSON.parse(text);
  for (const v of vectors) {
    v.time_nanos = BigInt(v.time_nanos);
    v.duration_nanos = BigInt(v.duration_nanos);
  }
  return vectors;
}

const vectors = loadVectors();

test('vectors file holds the four documented vectors', () => {
  assert.deepStrictEqual(
    vectors.map((v) => v.name),
    ['cpu_two_stacks', 'wall_threads', 'empty_profile', 'unicode_frames'],
  );
});

for (const v of vectors) {
  test(`encoder reproduces vector ${v.name} byte for byte`, () => {
    const got = encodeProfile(v).toString('hex');
    assert.strictEqual(got, v.pprof_hex);
  });
  test(`vector ${v.name}: numbers as Number give the same bytes where exact`, () => {
    const asNumbers = { ...v, duration_nanos: Number(v.duration_nanos) };
    assert.strictEqual(encodeProfile(asNumbers).toString('hex'), v.pprof_hex);
  });
}

test('gzip round-trips and is sniffable (1f 8b)', async () => {
  const raw = encodeProfile(vectors[0]);
  const gz = await gzip(raw);
  assert.strictEqual(gz[0], 0x1f);
  assert.strictEqual(gz[1], 0x8b);
  assert.ok(zlib.gunzipSync(gz).equals(raw));
});

test('independent decoder reads back what the encoder wrote', () => {
  const v = vectors[1];
  const p = decodeProfile(encodeProfile(v));
  assert.deepStrictEqual(p.sampleType, [['samples', 'count'], ['wall', 'nanoseconds']]);
  assert.strictEqual(p.period, 20000000n);
  assert.strictEqual(p.timeNanos, v.time_nanos);
  assert.deepStrictEqual(
    p.samples.map((s) => [s.stack.join(';'), s.values.map(Number)]),
    v.samples.map((s) => [s.stack.join(';'), [s.count, s.value_ns]]),
  );
});

test('encodeWithin keeps the heaviest stacks under the size limit', async () => {
  const samples = [];
  for (let i = 0; i < 4000; i++) {
    const count = 1 + (i % 3); // so that countKept (V8 samples) differs from samplesKept (stacks)
    const value_ns = i === 1234 ? 1e9 : 1000 + i;
    samples.push({ stack: [`m${i}.f${i * 7919}`, `deep/${i}.g`], count, value_ns });
  }
  const p = { type: 'cpu', time_nanos: 1, duration_nanos: 1, period: 1, samples };
  const full = await encodeWithin(p, 1 << 30);
  assert.strictEqual(full.samplesKept, 4000);
  assert.strictEqual(full.countKept, 4000 + 1333 * (1 + 2)); // i % 3 is 1 or 2 1333 times each
  const small = await encodeWithin(p, 8 * 1024);
  assert.ok(small.body.length <= 8 * 1024, `${small.body.length} bytes`);
  assert.ok(small.samplesKept < 4000 && small.samplesKept > 0);
  const back = decodeProfile(zlib.gunzipSync(small.body));
  assert.ok(back.samples.some((s) => s.stack[0] === `m1234.f${1234 * 7919}`), 'heaviest stack kept');
  assert.strictEqual(back.samples.length, small.samplesKept);
  assert.strictEqual(small.countKept, back.samples.reduce((n, s) => n + Number(s.values[0]), 0));
  const none = await encodeWithin(p, 10);
  assert.strictEqual(none.body, null);
  assert.strictEqual(none.countKept, 0);
});
