'use strict';
// Accuracy workload (tests/accuracy): the main thread burns about 0.7 of a CPU in one known
// function, burnHot, under the RootTrace Node SDK. Every 100 ms a timer calls burnHot over
// and over for 70 ms of wall time, so the thread alternates a burst of CPU with an idle event
// loop; on a busy host, or under a CPU quota, the burst gets less than 70 ms of CPU. The
// period is long enough that the timer's own cost per tick stays small next to the burst.
// Run with --no-turbo-inlining --no-use-osr (docs/sdk/node.md, Limits).
// Usage: node burn_hot.js SDK_DIR SERVER KEY SERVICE RUN_S
// Events (harness.js), and after every burst {"event":"burn","t":...,"burn_ms":...,
// "burn_cpu_ms":...}: the wall time and the CPU time (process.cpuUsage(): the other threads
// are idle meanwhile) spent inside burnHot since the start, measured around each burst (the
// workload's own account, which the test compares with the profiler's).

const { run, emit } = require('./harness');

const BURN_MS = 70;
const CHUNK = 50000; // xorshift rounds per call: ~0.2 ms, so burnHot is called ~350 times a tick

function burnHot(seed, n) {
  let x = seed | 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x = (x + i) | 0;
  }
  return x;
}

function cpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

let acc = 1;
let burnMs = 0;
let burnCpuMs = 0;

function burst() {
  const c0 = cpuMs();
  const end = performance.now() + BURN_MS;
  for (let t0 = performance.now(); t0 < end;) {
    acc = burnHot(acc, CHUNK);
    const t1 = performance.now();
    burnMs += t1 - t0;
    t0 = t1;
  }
  burnCpuMs += cpuMs() - c0;
  emit({ event: 'burn', burn_ms: burnMs, burn_cpu_ms: burnCpuMs, acc });
}

run({ periodMs: 100, work: burst });
