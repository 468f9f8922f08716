'use strict';
// Agreement workload (tests/accuracy): the main thread spends about half its time
// blocked synchronously in Atomics.wait inside one named function, blockHalf (10 ms every
// 20 ms), and burns little CPU otherwise. V8 samples the blocked thread as if it ran, so
// RootTrace's cpu_agreement must warn, and capacity must take the kernel's figure.
// Usage: node block_half.js SDK_DIR SERVER KEY SERVICE RUN_S   (events: harness.js)

const { run } = require('./harness');

const BLOCK_MS = 10;
const cell = new Int32Array(new SharedArrayBuffer(4)); // stays 0: every wait times out

function blockHalf() {
  return Atomics.wait(cell, 0, 0, BLOCK_MS); // 'timed-out'
}

run({ periodMs: 20, work: blockHalf });
