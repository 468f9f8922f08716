// The Node SDK's fault application (tests/faults/run.py): request-like units of work (JSON and
// sha256, ~1 ms) every ~4 ms on the event loop, each unit's latency measured from when it was
// due (so time the loop was blocked counts), reported with the SDK's status() once a second as
// one JSON line. Stops, flushing the SDK, when stdin closes. Env: RT_SERVER, RT_KEY, RT_SERVICE,
// RT_INSTANCE.
'use strict';
const crypto = require('node:crypto');
const path = require('node:path');
const rt = require(path.join(__dirname, '..', '..', '..', 'sdk', 'node'));

const profiler = rt.start({ server: process.env.RT_SERVER, key: process.env.RT_KEY,
  service: process.env.RT_SERVICE, instance: process.env.RT_INSTANCE, version: 'faults-1' });

function unit(seed) {
  const lines = [];
  for (let j = 0; j < 40; j++) lines.push({ sku: `SKU-${(seed * 31 + j) % 997}`, qty: j % 7 + 1 });
  const text = JSON.stringify({ id: seed, lines });
  const back = JSON.parse(text);
  let s = 0;
  for (const l of back.lines) s += l.qty;
  return s + crypto.createHash('sha256').update(text).digest()[0];
}

let units = [];
let last = Date.now();
let i = 0;
let stopping = false;

function emit(final) {
  const st = rt.status();
  process.stdout.write(JSON.stringify({ t: Date.now() / 1000, u: units, status: st.status,
    queued: st.profiles_queued, sent: st.profiles_sent, dropped: st.profiles_dropped,
    final }) + '\n');
  units = [];
}

function tick(due) {
  for (let k = 0; k < 3; k++) unit(i);
  i++;
  const end = performance.timeOrigin + performance.now();
  units.push([Math.floor(due), Math.round((end - due) * 1000)]);
  if (end - last >= 1000) {
    emit(false);
    last = end;
  }
  if (stopping) return;
  setTimeout(() => tick(end + 4), 4);
}

process.stdin.resume();
process.stdin.on('end', async () => {
  stopping = true;
  await profiler.stop();
  emit(true);
});
tick(performance.timeOrigin + performance.now());
