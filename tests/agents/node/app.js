// Burns CPU in hotLoop (~3/4) and coldLoop (~1/4) while @pyroscope/nodejs
// 0.6.4 uploads to tests/agents/capture.py.
//
//   node app.js [--server URL] [--duration 35] [--flush-ms 5000]
//               [--mode wall|wall-cpu|all] [--app agents.node] [--password KEY]
//   mode wall      startWallProfiling() (startCpuProfiling() is an alias of it in 0.6.4)
//   mode wall-cpu  the same with wall.collectCpuTime = true
//   mode all       start(): the wall profiler and the heap profiler
'use strict';
const os = require('node:os');
// The CJS build exports init/start/stop at the top level; the rest is on .default
const Pyroscope = require('@pyroscope/nodejs').default;

const args = process.argv.slice(2);
function arg(name, def) {
  const i = args.indexOf('--' + name);
  return i >= 0 ? args[i + 1] : def;
}
const server = arg('server', process.env.SERVER || 'http://127.0.0.1:4040');
const durationS = Number(arg('duration', '35'));
const flushMs = Number(arg('flush-ms', '5000'));
const mode = arg('mode', 'wall');
const appName = arg('app', 'agents.node');
// the basic-auth password: a RootTrace ingest key against `roottrace serve`
const password = arg('password', process.env.PYROSCOPE_BASIC_AUTH_PASSWORD || 'rt_testkey');

let sink = 0;

function hotLoop(n) {
  let x = 1;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
  }
  return x;
}

function coldLoop(n) {
  let x = 3;
  for (let i = 0; i < n; i++) {
    x = (x * 22695477 + 1) % 4294967296;
  }
  return x;
}

Pyroscope.init({
  serverAddress: server,
  appName,
  basicAuthUser: 'roottrace',
  basicAuthPassword: password,
  tenantID: 'rt-tenant',
  flushIntervalMs: flushMs,
  tags: { version: '1.0.0', hostname: os.hostname() },
  wall: {
    samplingDurationMs: flushMs,
    collectCpuTime: mode === 'wall-cpu',
  },
});

if (mode === 'all') {
  Pyroscope.start();
} else {
  Pyroscope.startWallProfiling();
}

const deadline = Date.now() + durationS * 1000;
// Work in slices and yield to the event loop so the agent's timers run.
function slice() {
  const end = Date.now() + 20;
  while (Date.now() < end) {
    sink += hotLoop(300000);
    sink += coldLoop(100000);
  }
  if (mode === 'all') {
    // a little allocation for the heap profiler
    globalThis.__keep = new Array(10000).fill(sink);
  }
  if (Date.now() < deadline) {
    setImmediate(slice);
  } else {
    Pyroscope.stop().then(() => {
      console.log('done', sink % 10);
      // 0.6.4 can still fire a scheduled profiling round after stop() and
      // throw "Wall profiler is not started": exit now.
      process.exit(0);
    });
  }
}
slice();
