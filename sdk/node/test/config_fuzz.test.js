'use strict';
// Property test of parseConfig (DESIGN §5) on seeded hostile bodies: mutations of a valid
// config (wrong types, huge numbers, NaN-ish tokens, deep nesting, long and unicode strings,
// duplicate keys, truncated or corrupted JSON). For every body parseConfig never throws and
// returns {ok: false} (profiling off) or a config whose every bound lies within the compiled
// clamps; it is enabled only when the body is a JSON object whose "enabled" is true; the
// same body gives the same answer; a generated body with a known outcome gets exactly it.
// Saved inputs in sdk/testdata/config_fuzz/ are replayed. ROOTTRACE_CONFIG_FUZZ_SECONDS=N
// runs for N seconds from a random seed instead (scripts/fuzz-sdk.sh), saving a failing body
// there.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const config = require('../lib/config');

const CRASHES = path.join(__dirname, '..', '..', 'testdata', 'config_fuzz'); // shared by the five SDKs
const CASES = 4000; // a second or two here
const L = config.LIMITS;
const NUMERIC = {
  sampling_interval_us: [L.sampling_interval_min_us, L.sampling_interval_max_us, true],
  upload_interval_s: [L.upload_interval_min_s, L.upload_interval_max_s, false],
  max_stack_depth: [L.stack_depth_min, L.stack_depth_max, true],
  poll_interval_s: [L.poll_interval_min_s, L.poll_interval_max_s, false],
};
const BASE = [['enabled', true], ['type', 'cpu'], ['sampling_interval_us', 10000],
  ['upload_interval_s', 60], ['max_stack_depth', 256], ['poll_interval_s', 10], ['etag', 'e1']];

/** mulberry32: a small seeded generator (deterministic for a seed). */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)] };
}

// A value is a JS value, {raw: text, kind} (written as is: "nonjson" makes the body invalid,
// "overflow" is a number beyond a double, "deep" nesting), or {obj: [[k, v], ...]} (an
// object whose keys may repeat).
const raw = (text, kind) => ({ raw: text, kind });
function dump(v) {
  if (v && v.raw !== undefined) return v.raw;
  if (v && v.obj) return '{' + v.obj.map(([k, x]) => JSON.stringify(k) + ': ' + dump(x)).join(', ') + '}';
  if (Array.isArray(v)) return '[' + v.map(dump).join(',') + ']';
  if (typeof v === 'number' && Object.is(v, -0)) return '-0';
  return JSON.stringify(v);
}

const CHARS = ['a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\u0000', '\u007f', 'é', '模', '😀', '\u2028',
  '\ufeff', '\ud800', '%', '&', '='];
function text(r) {
  const n = r.pick([0, 1, 3, 10, 200, 5000]);
  let s = '';
  for (let i = 0; i < n; i++) s += r.pick(CHARS);
  return s;
}
function number(r) {
  return r.pick([0, -0, 1, -1, 5, 9.999, 10, 30.5, 60, 255.9, 256, 257, 300, 301, 599.5, 600, 601,
    1000, 9999, 10000, 12345.6, 999999.4, 1000001, 2 ** 31, 2 ** 53 + 2, 2 ** 63, 1e30, -1e30, 1e12,
    -1e12, 1e308, -1e308, 1e-300, 5e-324, r.next() * 1e6 - 1e3, r.int(1e7) - 1e6]);
}
function junk(r, depth = 0) {
  switch (r.int(depth < 4 ? 8 : 5)) {
    case 0: return null;
    case 1: return r.next() < 0.5;
    case 2: return number(r);
    case 3: return text(r);
    case 4: {
      const tok = r.pick(['NaN', 'Infinity', '-Infinity', '1e400', '-1e400']);
      return raw(tok, /\d$/.test(tok) ? 'overflow' : 'nonjson');
    }
    case 5: return Array.from({ length: r.int(4) }, () => junk(r, depth + 1));
    case 6: return { obj: Array.from({ length: r.int(4) }, () => [text(r).slice(0, 8), junk(r, depth + 1)]) };
    default: {
      const d = r.pick([10, 30, 200, 5000]);
      return raw('['.repeat(d) + ']'.repeat(d), 'deep');
    }
  }
}
const kindOf = (key) => (key === 'enabled' ? 'boolean' : key === 'type' || key === 'etag' ? 'string' : 'number');
const isKind = (v, kind) => typeof v === kind && !(v && v.raw !== undefined);
function wrong(r, kind) {
  return r.pick([null, true, '60', 'NaN', '', [], [1], { obj: [] }, 60, 0].filter((v) => {
    if (v && v.obj) return true;
    return typeof v !== kind;
  }));
}
function hasNonJson(v) {
  if (v && v.raw !== undefined) return v.kind === 'nonjson';
  if (v && v.obj) return v.obj.some(([, x]) => hasNonJson(x));
  return Array.isArray(v) && v.some(hasNonJson);
}

/** An etag the server takes back in a query: at most 256 printable ASCII characters but '"'. */
const sendable = (e) => e.length <= 256 && [...e].every((ch) => ch >= '!' && ch <= '~' && ch !== '"');

/** Expected outcome of an object given as pairs: 'invalid', 'unknown' or {valid: fields}. */
function expectOf(pairs) {
  if (pairs.some(([, v]) => hasNonJson(v))) return 'invalid';
  const obj = new Map(pairs); // last wins, as JSON.parse
  if (typeof obj.get('enabled') !== 'boolean') return 'invalid';
  for (const k of ['type', 'etag']) if (obj.has(k) && typeof obj.get(k) !== 'string') return 'invalid';
  if (obj.has('etag') && !sendable(obj.get('etag'))) return 'invalid'; // refused by the server later
  // a lone surrogate is not Unicode: refused in every SDK (sdk/testdata/config_fuzz/)
  const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
  if (obj.has('type') && lone.test(obj.get('type'))) return 'invalid';
  for (const k of Object.keys(NUMERIC)) {
    const v = obj.get(k);
    if (obj.has(k) && typeof v !== 'number' && !(v && v.kind === 'overflow')) return 'invalid';
  }
  return { valid: obj };
}

/** One hostile body: {body, expect}. */
function generate(r) {
  const pairs = BASE.map((p) => p.slice());
  for (let i = pairs.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [pairs[i], pairs[j]] = [pairs[j], pairs[i]];
  }
  for (let n = 1 + r.int(4); n > 0; n--) {
    const i = r.int(pairs.length);
    const key = pairs[i][0];
    const kind = kindOf(key);
    switch (r.int(8)) {
      case 0: pairs.splice(i, 1); if (!pairs.length) pairs.push(['enabled', false]); break;
      case 1: pairs[i] = [key, wrong(r, kind)]; break;
      case 2: pairs[i] = [key, kind === 'number' ? number(r) : kind === 'boolean' ? r.next() < 0.5 : text(r)]; break;
      case 3:
        if (kind === 'number') {
          const tok = r.pick(['NaN', 'Infinity', '-Infinity', 'nan', '1e400', '-1e400', '1E+999']);
          pairs[i] = [key, raw(tok, /\d$/.test(tok) ? 'overflow' : 'nonjson')];
        }
        break;
      case 4: pairs.splice(r.int(pairs.length + 1), 0, [text(r).slice(0, 12) || 'x', junk(r)]); break;
      case 5: pairs.splice(r.int(pairs.length + 1), 0, [key, r.next() < 0.5 ? junk(r) : pairs[i][1]]); break;
      case 6: pairs[i] = [key, junk(r)]; break;
      default: pairs.push(['enabled', r.next() < 0.5]);
    }
  }
  let body = dump({ obj: pairs });
  let expect = expectOf(pairs);
  const mut = r.int(10);
  if (mut === 0 && body.length > 1) {
    body = body.slice(0, 1 + r.int(body.length - 1)); // a strict prefix of an object: never JSON
    expect = 'invalid';
  } else if (mut === 1) {
    const b = Buffer.from(body, 'utf8');
    for (let n = 1 + r.int(3); n > 0; n--) b[r.int(b.length)] = r.int(256);
    return { body: b, expect: 'unknown' };
  } else if (mut === 2) {
    const pos = r.int(body.length + 1);
    body = body.slice(0, pos) + r.pick([',', '}', '{', ']', '"', ':', '\\u', '\u0000', ' ']) + body.slice(pos);
    expect = 'unknown';
  }
  return { body: Buffer.from(body, 'utf8'), expect };
}

const SEEDS = [
  dump({ obj: BASE }), '{"enabled": false}', '{"enabled": true}', '', '{', '[]', 'null',
  '{"enabled": "true"}', '{"enabled": null}', '{"enabled": true} trailing', '\xff\xfe',
  '{"enabled": true, "enabled": false}', '{"enabled": true, "etag": "\\ud800"}',
  dump({ obj: BASE }).replace('10000', 'NaN'), '{"enabled": true, "poll_interval_s": 1e400}',
  '{"enabled": true, "max_stack_depth": 99999999999999999999999}',
  '{"enabled": true, "__proto__": {"type": 5, "enabled": false}}',
  '{"enabled": true, "x": ' + '['.repeat(100000) + ']'.repeat(100000) + '}',
].map((s) => ({ body: Buffer.from(s, 'utf8'), expect: 'unknown' }));

/** Throws (AssertionError) unless parseConfig keeps the invariants on body. */
function check(body, expect = 'unknown') {
  const got = config.parseConfig(body); // a throw here fails the test
  assert.deepStrictEqual(config.parseConfig(body), got, 'not deterministic');
  if (expect === 'invalid') assert.strictEqual(got.ok, false, 'accepted an invalid config');
  if (!got.ok) {
    assert.ok(typeof expect === 'string', `refused a valid config: ${got.reason}`);
    assert.strictEqual(typeof got.reason, 'string');
    return;
  }
  const c = got.config;
  const obj = JSON.parse(body.toString('utf8'));
  assert.ok(obj && typeof obj === 'object' && !Array.isArray(obj), 'accepted a non-object');
  assert.strictEqual(c.enabled, obj.enabled, 'enabled differs from the body');
  assert.strictEqual(typeof c.enabled, 'boolean');
  for (const [name, [lo, hi, integral]] of Object.entries(NUMERIC)) {
    const v = c[name];
    assert.ok(typeof v === 'number' && v >= lo && v <= hi, `${name} = ${v} outside [${lo}, ${hi}]`);
    if (integral) assert.ok(Number.isInteger(v), `${name} = ${v} not an integer`);
    const sent = Object.prototype.hasOwnProperty.call(obj, name) ? obj[name] : config.DEFAULTS[name];
    const want = Math.min(Math.max(sent, lo), hi);
    assert.ok(Math.abs(v - want) <= (integral ? 0.5 : 0), `${name}: sent ${sent}, got ${v}`);
  }
  assert.strictEqual(c.type, Object.prototype.hasOwnProperty.call(obj, 'type') ? obj.type : 'cpu');
  assert.strictEqual(c.etag, Object.prototype.hasOwnProperty.call(obj, 'etag') ? obj.etag : null);
  assert.ok(c.etag === null || sendable(c.etag), 'etag cannot be sent back');
}

function run(seed, n, deadline) {
  const r = rng(seed);
  let i = 0;
  const seen = { invalid: 0, valid: 0, unknown: 0 };
  for (; i < n && (deadline === undefined || i % 256 !== 0 || Date.now() < deadline); i++) {
    const { body, expect } = generate(r);
    try {
      check(body, expect);
    } catch (e) {
      if (deadline !== undefined) {
        fs.mkdirSync(CRASHES, { recursive: true });
        const file = path.join(CRASHES, `crash-seed${seed}-case${i}`);
        fs.writeFileSync(file, body);
        e.message += ` (body saved in ${file})`;
      }
      e.message = `seed ${seed}, case ${i}, expect ${typeof expect === 'string' ? expect : 'valid'}: ` +
        `${e.message}; body ${JSON.stringify(body.toString('latin1').slice(0, 300))}`;
      throw e;
    }
    seen[typeof expect === 'string' ? expect : 'valid']++;
  }
  return { cases: i, seen };
}

test('seeded hostile config bodies keep the invariants', (t) => {
  for (const { body } of SEEDS) check(body);
  const seconds = Number(process.env.ROOTTRACE_CONFIG_FUZZ_SECONDS || 0);
  if (seconds > 0) {
    const seed = Number(process.env.ROOTTRACE_CONFIG_FUZZ_SEED || Date.now() % 2 ** 31);
    const { cases, seen } = run(seed, Infinity, Date.now() + seconds * 1000);
    t.diagnostic(`config fuzz: seed ${seed}, ${cases} cases in ${seconds} s ${JSON.stringify(seen)}`);
    return;
  }
  const { seen } = run(20261130, CASES);
  // Each outcome is reached often: a generator stuck on one would prove little.
  for (const k of Object.keys(seen)) assert.ok(seen[k] > CASES / 20, JSON.stringify(seen));
});

test('saved fuzz inputs keep the invariants', () => {
  const names = fs.readdirSync(CRASHES).filter((f) => f !== 'README.md');
  assert.ok(names.length > 0, 'sdk/testdata/config_fuzz/ holds the regression inputs');
  for (const f of names) check(fs.readFileSync(path.join(CRASHES, f)), f.startsWith('invalid-') ? 'invalid' : 'unknown');
});
