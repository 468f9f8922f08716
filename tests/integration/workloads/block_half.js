'use strict';
// Agreement workload for test_node_accuracy.py: the main thread spends about half its time
// blocked synchronously in Atomics.wait inside one named function, blockHalf (10 ms every
// 20 ms), and burns little CPU otherwise. V8 samples the blocked thread as if it ran, so
// RootTrace's cpu_agreement must warn.
// Usage: node block_half.js SDK_DIR SERVER KEY SERVICE RUN_S   (output as burn_half.js)

const [sdkDir, server, key, service, runS] = process.argv.slice(2);
const rt = require(sdkDir);

const PERIOD_MS = 20;
const BLOCK_MS = 10;
const cell = new Int32Array(new SharedArrayBuffer(4)); // stays 0: every wait times out

function blockHalf() {
  return Atomics.wait(cell, 0, 0, BLOCK_MS); // 'timed-out'
}

function emit(obj) {
  process.stdout.write(JSON.stringify({ ...obj, t: Date.now() / 1000 }) + '\n');
}

const profiler = rt.start({ server, key, service, version: 'accuracy-1' });
let next = performance.now();
let profilingSince = null;

function tick() {
  blockHalf();
  if (profilingSince === null && rt.status() === 'profiling') {
    profilingSince = performance.now();
    emit({ event: 'profiling' });
  }
  if (profilingSince !== null && performance.now() - profilingSince >= Number(runS) * 1000) {
    finish();
    return;
  }
  const now = performance.now();
  next = Math.max(next + PERIOD_MS, now);
  setTimeout(tick, Math.max(0, next - now));
}

async function finish() {
  emit({ event: 'stopping' });
  await profiler.stop();
  emit({ event: 'stopped', info: profiler.info() });
}

setTimeout(tick, 0);
