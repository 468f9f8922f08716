'use strict';
// A fixed CPU-bound Node workload for bench/sdk_overhead/run.sh: JSON, crypto and string work,
// the same every run. The work is timed from the moment the SDK is profiling (or at once
// without it) to its end. With the SDK, profiler.stop() (end the profile, encode, gzip,
// upload: what each upload interval costs) is timed apart, as stop_wall_s and stop_cpu_s.
// Usage: node [--expose-gc] work_node.js ROUNDS                            (no SDK)
//        node [--expose-gc] work_node.js ROUNDS SDK_DIR SERVER KEY SERVICE (SDK at defaults)
// Prints one JSON line: {"sdk", "wall_s", "cpu_s", "stop_wall_s", "stop_cpu_s", "checksum",
// "full_gc", "sdk_info"}.

const crypto = require('node:crypto');

const [roundsArg, sdkDir, server, key, service] = process.argv.slice(2);
const ROUNDS = Number(roundsArg);
const WARMUP_ROUNDS = 40; // before a co-scheduled run's barrier

function makeOrder(i) {
  const lines = [];
  for (let j = 0; j < 20; j++) {
    const price = ((i * j) % 500) / 10 + 0.99;
    lines.push({ sku: `SKU-${(i * 31 + j) % 997}`, qty: ((i + j) % 7) + 1, price });
  }
  const notes = 'deliver to the back door '.repeat(3);
  return { id: i, customer: `customer-${i % 113}`, lines, notes };
}

function priceOrder(order) {
  let total = 0;
  for (const l of order.lines) total += l.qty * l.price;
  return Math.round(total * 100) / 100;
}

function oneRound(r) {
  let check = 0;
  for (let i = 0; i < 200; i++) {
    const order = makeOrder(r * 200 + i);
    const text = JSON.stringify(order);
    const back = JSON.parse(text);
    check = (check + priceOrder(back) * 100) % 1e9;
    const digest = crypto.createHash('sha256').update(text).digest('hex');
    check = (check + parseInt(digest.slice(0, 6), 16)) % 1e9;
    const words = text.replace(/[^a-z0-9]+/gi, ' ').split(' ').filter(Boolean);
    words.sort();
    check = (check + words.join('-').toUpperCase().length) % 1e9;
  }
  return check;
}

function cpuS() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

// With RT_BENCH_BARRIER set (bench/sdk_overhead/copair.py), says "ready" on stderr and waits
// for a line on stdin, so that the two runs of a pair start their timed work together.
let fullGc = false; // whether the run took its full GC before the timed part (barrier)

function barrier() {
  if (!process.env.RT_BENCH_BARRIER) return;
  // Warm the JIT first (untimed, the same seeds in both runs), then collect what start-up
  // left (run.sh gives node --expose-gc), as WorkJava does: the timed part then measures a
  // process past its start, as a running service is. The warm-up's seeds (ROUNDS up) make
  // other orders of the timed rounds' kinds: positive small integers throughout (i * j and
  // i * 31 stay far below V8's small-integer limit, 2^30). Stop 40 seeded with negative
  // numbers (-0, negative quantities), stop 41 first from 1e6 up (i * j past 2^30: heap
  // numbers). What each measured: docs/performance-sdk.md, "SDK overhead
  // (`bench/sdk_overhead`): the results", *What the figures mean*, Node's stops 40-41.
  if (typeof global.gc !== 'function') {
    throw new Error('a co-scheduled run needs node --expose-gc (its full GC before the timed part)');
  }
  let warm = 0;
  for (let r = 0; r < WARMUP_ROUNDS; r++) warm = (warm + oneRound(ROUNDS + r)) % 1e9;
  if (warm === 42) process.stderr.write('(warm-up checksum)\n');
  global.gc();
  fullGc = true;
  const fs = require('node:fs');
  fs.writeSync(2, 'ready\n');
  fs.readSync(0, Buffer.alloc(1), 0, 1, null);
}

async function main() {
  let profiler = null;
  let rt = null;
  if (sdkDir) {
    rt = require(sdkDir);
    profiler = rt.start({ server, key, service, version: 'bench-1' });
    const deadline = Date.now() + 15000;
    while (rt.status().state !== 'profiling') {
      if (Date.now() > deadline) {
        throw new Error(`SDK not profiling after 15 s: ${rt.status().status}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  barrier();
  const t0 = performance.now();
  const c0 = cpuS();
  let check = 0;
  for (let r = 0; r < ROUNDS; r++) check = (check + oneRound(r)) % 1e9;
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuS() - c0;
  let stopWall = null;
  let stopCpu = null;
  if (profiler) {
    const s0 = performance.now();
    const sc0 = cpuS();
    await profiler.stop();
    stopWall = (performance.now() - s0) / 1000;
    stopCpu = cpuS() - sc0;
  }
  const info = profiler ? profiler.info() : null;
  process.stdout.write(JSON.stringify({
    sdk: !!profiler,
    wall_s: wall,
    cpu_s: cpu,
    stop_wall_s: stopWall,
    stop_cpu_s: stopCpu,
    checksum: check,
    full_gc: fullGc,
    sdk_info: info && {
      status: info.status,
      profiles: info.profiles,
      uploads: info.uploads,
      median_delta_us: info.lastMedianDeltaUs,
      interval_us: info.interval_us,
    },
  }) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
