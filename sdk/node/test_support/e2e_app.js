'use strict';
// A small service for the end-to-end test: uses the SDK as an application would and burns
// CPU in one named function. Prints a JSON line with the SDK's status every 250 ms: status (the
// string), st (the whole status() object), and figures from info().
// Usage: node e2e_app.js SERVER KEY SERVICE MODE SECONDS
//   MODE stop: calls p.stop() at the end; MODE exit: just returns (the exit flush uploads).

const rt = require('../index.js');

const [server, key, service, mode, seconds] = process.argv.slice(2);
const p = rt.start({ server, key, service, version: 'e2e-1' });

function burnTheCpuForE2E(ms) {
  const end = Date.now() + ms;
  let x = 0;
  for (;;) {
    for (let i = 0; i < 20000; i++) x += Math.sqrt(x + i);
    if (Date.now() >= end) return x;
  }
}

function report(event) {
  const info = p.info();
  const st = rt.status();
  const line = {
    event,
    status: st.status,
    st,
    polls: info.polls,
    uploads: info.uploads,
    profiles: info.profiles,
    median_delta_us: info.lastMedianDeltaUs,
  };
  process.stdout.write(JSON.stringify(line) + '\n');
}

process.on('exit', () => report('exit'));

async function main() {
  const end = Date.now() + Number(seconds) * 1000;
  const tick = setInterval(() => report('tick'), 250);
  while (Date.now() < end) {
    burnTheCpuForE2E(40);
    await new Promise((r) => setImmediate(r));
  }
  clearInterval(tick);
  report('done');
  if (mode === 'stop') {
    const t0 = Date.now();
    await p.stop();
    process.stdout.write(JSON.stringify({ event: 'stopped', stop_ms: Date.now() - t0 }) + '\n');
  }
}

main();
