'use strict';
// Accuracy workload for test_node_accuracy.py: the main thread burns about half a CPU in one
// known function, burnHalf, under the RootTrace Node SDK. Every 100 ms a timer calls
// burnHalf over and over for 50 ms, so the thread alternates 50 ms of CPU and 50 ms idle in
// the event loop. The period is long enough that the timer's own cost per tick stays small
// next to the burn on a slow host (at 20 ms it was 10% of the thread's CPU on a CI machine). Run with --no-turbo-inlining --no-use-osr (sdk/node/README.md, Limits).
// Usage: node burn_half.js SDK_DIR SERVER KEY SERVICE RUN_S
// Prints JSON lines on stdout: {"event":"profiling","t":<unix s>} when the SDK starts
// profiling, {"event":"burn","t":...,"burn_ms":<ms>} after every tick (the wall time spent
// inside burnHalf since the start, measured around each call: the workload's own account,
// which the test compares with the profiler's), {"event":"stopped","t":...,"info":{...}}
// after profiler.stop().

const [sdkDir, server, key, service, runS] = process.argv.slice(2);
const rt = require(sdkDir);

const PERIOD_MS = 100;
const BURN_MS = 50;
const CHUNK = 50000; // xorshift rounds per call: ~0.2 ms, so burnHalf is called ~50 times a tick

function burnHalf(seed, n) {
  let x = seed | 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x = (x + i) | 0;
  }
  return x;
}

function emit(obj) {
  process.stdout.write(JSON.stringify({ ...obj, t: Date.now() / 1000 }) + '\n');
}

const profiler = rt.start({ server, key, service, version: 'accuracy-1' });
let acc = 1;
let next = performance.now();
let timer = null;
let profilingSince = null;
let burnMs = 0;

function tick() {
  const end = performance.now() + BURN_MS;
  for (let t0 = performance.now(); t0 < end;) {
    acc = burnHalf(acc, CHUNK);
    const t1 = performance.now();
    burnMs += t1 - t0;
    t0 = t1;
  }
  emit({ event: 'burn', burn_ms: burnMs });
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
  timer = setTimeout(tick, Math.max(0, next - now));
}

async function finish() {
  emit({ event: 'stopping' });
  await profiler.stop();
  emit({ event: 'stopped', info: profiler.info(), acc });
}

timer = setTimeout(tick, 0);
