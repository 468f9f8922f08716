'use strict';
// start() refuses service and instance names the server would refuse (1-200 bytes of valid
// UTF-8, no control characters, no '/'): status `error: invalid ... name (...)` and no poll.
// And the status carries the server's message when a poll is refused (403).

const test = require('node:test');
const assert = require('node:assert');
const os = require('node:os');
const { Profiler, defaultInstance } = require('../lib/profiler');
const { nameProblem, NAME_MAX_BYTES } = require('../lib/names');
const { isValidStatus } = require('../lib/status');
const { startFake, defaultConfig, spySessions, sleep, until, KEY } = require('../test_support/fake_control_plane');

const BAD = [
  ['empty', '', 'empty'],
  ['201 bytes', 'x'.repeat(201), '201 bytes, at most 200'],
  ['201 bytes of unicode', '\u00e9'.repeat(100) + 'x', '201 bytes, at most 200'],
  ['a newline', 'a\nb', 'control character U+000A'],
  ['a slash', 'a/b', "contains '/'"],
  ['a tab', 'a\tb', 'control character U+0009'],
  ['DEL', 'a\x7fb', 'control character U+007F'],
  ['a lone surrogate', 'a\ud800b', 'not valid UTF-8: lone surrogate'],
];

for (const which of ['service', 'instance']) {
  for (const [why, name, reason] of BAD) {
    test(`${which} name with ${why}: error status, no polling`, async (t) => {
      const cp = await startFake(defaultConfig());
      t.after(() => cp.close());
      const opts = { server: cp.url, key: KEY, service: 'svc', instance: 'inst-1', _createSession: spySessions().create };
      opts[which] = name;
      const p = new Profiler(opts).start();
      assert.strictEqual(p.statusText(), `error: invalid ${which} name (${reason})`);
      assert.ok(isValidStatus(p.statusText()), p.statusText());
      await sleep(300);
      assert.strictEqual(cp.polls.length, 0);
      await p.stop();
    });
  }
}

for (const name of ['caf\u00e9-\u670d\u52a1-\u{1f680}', 'a\u0085b', '\u00e9'.repeat(100), 'x'.repeat(NAME_MAX_BYTES), 'a b.c:d@e']) {
  test(`valid name ${JSON.stringify(name.slice(0, 12))}... (${Buffer.byteLength(name)} bytes) reaches the server as is`, async (t) => {
    assert.strictEqual(nameProblem(name), null);
    const cp = await startFake(defaultConfig({ enabled: false }));
    t.after(() => cp.close());
    const p = new Profiler({ server: cp.url, key: KEY, service: name, instance: name, _createSession: spySessions().create }).start();
    assert.ok(await until(() => p.statusText() === 'disabled', 2000), p.statusText());
    assert.strictEqual(cp.polls[0].query.service, name);
    assert.strictEqual(cp.polls[0].query.instance, name);
    await p.stop();
  });
}

test('the generated instance id is a valid name, whatever the host name', (t) => {
  const orig = os.hostname;
  t.after(() => {
    os.hostname = orig;
  });
  os.hostname = () => 'h/\nost' + '\u00e9'.repeat(200);
  const id = defaultInstance();
  assert.strictEqual(nameProblem(id), null, id);
  assert.ok(id.startsWith('h--ost'), id);
});

const BOUND = { error: 'forbidden', message: 'this ingest key is bound to another service' };

test('a 403 on the poll: the status carries the server\'s message', async (t) => {
  const cp = await startFake(defaultConfig());
  cp.hostile = (req, res) => {
    res.writeHead(403, { 'content-type': 'application/json' });
    res.end(JSON.stringify(BOUND));
  };
  t.after(() => cp.close());
  const p = new Profiler({ server: cp.url, key: KEY, service: 'svc', _createSession: spySessions().create }).start();
  const want = 'waiting: no config yet (config poll answered HTTP 403: this ingest key is bound to another service)';
  assert.ok(await until(() => p.statusText() === want, 2000), p.statusText());
  await p.stop();
  assert.strictEqual(p.statusText(), 'disabled: stopped');
});

test('a 403 while profiling: after 3 poll intervals the error status carries the message', async (t) => {
  const cp = await startFake(defaultConfig());
  const spy = spySessions();
  t.after(() => cp.close());
  const p = new Profiler({ server: cp.url, key: KEY, service: 'svc', _createSession: spy.create }).start();
  assert.ok(await until(() => p.statusText() === 'profiling', 2000), p.statusText());
  cp.hostile = (req, res) => {
    res.writeHead(403, { 'content-type': 'application/json' });
    res.end(JSON.stringify(BOUND));
  };
  const want = 'error: no valid config for 3 poll intervals (config poll answered HTTP 403: this ingest key is bound to another service)';
  assert.ok(await until(() => p.statusText() === want, 6000), p.statusText());
  assert.strictEqual(spy.active, 0);
  cp.hostile = null;
  assert.ok(await until(() => p.statusText() === 'profiling', 3000), p.statusText());
  await p.stop();
});

test('a long non-ASCII server message is cut to the 200-character printable ASCII reason', async (t) => {
  const cp = await startFake(defaultConfig());
  const message = 'denied \u00e9\u670d\u{1f680}\n\t' + 'z'.repeat(400);
  cp.hostile = (req, res) => {
    res.writeHead(403, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'forbidden', message }));
  };
  t.after(() => cp.close());
  const p = new Profiler({ server: cp.url, key: KEY, service: 'svc', _createSession: spySessions().create }).start();
  assert.ok(await until(() => p.statusText().includes('403'), 2000), p.statusText());
  const s = p.statusText();
  assert.ok(isValidStatus(s), s);
  assert.match(s, /^waiting: no config yet \(config poll answered HTTP 403: denied \?+ ?z+\)$/);
  assert.strictEqual(s.length, 'waiting: '.length + 200, s);
  await p.stop();
});
