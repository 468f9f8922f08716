// The Node SDK's compiled bounds against the one table every SDK is checked against
// (sdk/testdata/limits.json, DESIGN §5): a bound changed here and not there, or there and not
// here, fails this test.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { LIMITS } = require('../lib/config');
const { FLUSH_TIMEOUT_MS } = require('../lib/profiler');

const TABLE = JSON.parse(fs.readFileSync(
  path.join(__dirname, '..', '..', 'testdata', 'limits.json'), 'utf8'));

test('the compiled bounds are the shared table (sdk/testdata/limits.json)', () => {
  const { flush_timeout_s: flushS, ...bounds } = TABLE.shared;
  for (const [name, want] of Object.entries(bounds)) {
    assert.strictEqual(LIMITS[name], want, name);
  }
  assert.strictEqual(FLUSH_TIMEOUT_MS, flushS * 1000, 'flush_timeout_s');
  assert.strictEqual(LIMITS.sampling_interval_min_us, TABLE.sampling_interval_min_us.node);
});
