'use strict';
// After an outage the upload backoff (1 s doubling to 60 s) ends when the server is back: a
// valid poll after failed or invalid ones sends what is queued at once (tests/faults found
// profiles waiting up to 60 s after the server's return). While polls stay valid, a failing
// ingest keeps its backoff.

const test = require('node:test');
const assert = require('node:assert');
const zlib = require('node:zlib');
const { Profiler } = require('../lib/profiler');
const { Uploader } = require('../lib/uploader');
const { startFake, defaultConfig, spySessions, sleep, until, KEY } = require('../test_support/fake_control_plane');

test('retryNow ends a backoff in progress and sends the queued profile at once', async (t) => {
  const cp = await startFake(defaultConfig());
  t.after(() => cp.close());
  cp.uploadStatus = 503;
  const up = new Uploader({ server: cp.url, key: KEY, params: { service: 'shop' } });
  up.enqueue(zlib.gzipSync(Buffer.alloc(0)), { profile_id: 'p1' });
  assert.ok(await until(() => cp.uploads.length === 1 && up.retryTimer !== null, 2000));
  cp.uploadStatus = 201;
  const t0 = performance.now();
  up.retryNow();
  // The backoff's timer would fire 0.5-1 s later; retryNow sends now.
  assert.ok(await until(() => up.stats.uploaded === 1, 400), 'sent before the backoff ended');
  assert.ok(performance.now() - t0 < 450);
  assert.strictEqual(up.failures, 0);
  up.retryNow(); // nothing queued, no backoff: does nothing
  assert.strictEqual(cp.uploads.length, 2);
  up.close();
});

function profiler(cp) {
  return new Profiler({ server: cp.url, key: KEY, service: 'shop', instance: 'test-instance',
    _createSession: spySessions().create }).start();
}

test('a valid poll after failed polls ends the upload backoff; valid polls alone do not', async (t) => {
  const cp = await startFake(defaultConfig());
  t.after(() => cp.close());
  const p = profiler(cp);
  let kicks = 0;
  const orig = p.uploader.retryNow.bind(p.uploader);
  p.uploader.retryNow = () => { kicks++; orig(); };
  await sleep(2500); // valid polls (200, then 304s)
  assert.strictEqual(kicks, 0, 'no kick while every poll is valid');
  cp.hostile = (req, res) => {
    res.writeHead(500);
    res.end('{"error":"internal"}');
  };
  const n = cp.polls.length;
  assert.ok(await until(() => cp.polls.length >= n + 1, 2500), 'a failed poll');
  cp.hostile = null;
  assert.ok(await until(() => kicks === 1, 2500), 'kicked by the first valid poll after it');
  await sleep(1500);
  assert.strictEqual(kicks, 1, 'once');
  await p.stop();
});
