'use strict';
// What the Node accuracy workloads share (burn_hot.js, block_half.js): the SDK started on
// the command line's server, a timer calling work() every periodMs (late ticks are not made
// up), JSON events on stdout ({"event":"profiling"} once the SDK profiles, {"event":
// "stopping"} and {"event":"stopped","info":...} around profiler.stop()), and the end RUN_S
// seconds after profiling began.
// argv: SDK_DIR SERVER KEY SERVICE RUN_S

function emit(obj) {
  process.stdout.write(JSON.stringify({ ...obj, t: Date.now() / 1000 }) + '\n');
}

function run({ periodMs, work }) {
  const [sdkDir, server, key, service, runS] = process.argv.slice(2);
  const rt = require(sdkDir);
  const profiler = rt.start({ server, key, service, version: 'accuracy-1' });
  let next = performance.now();
  let profilingSince = null;

  async function finish() {
    emit({ event: 'stopping' });
    await profiler.stop();
    emit({ event: 'stopped', info: profiler.info() });
  }

  function tick() {
    work();
    if (profilingSince === null && rt.status().state === 'profiling') {
      profilingSince = performance.now();
      emit({ event: 'profiling' });
    }
    if (profilingSince !== null && performance.now() - profilingSince >= Number(runS) * 1000) {
      finish();
      return;
    }
    const now = performance.now();
    next = Math.max(next + periodMs, now);
    setTimeout(tick, Math.max(0, next - now));
  }

  setTimeout(tick, 0);
}

module.exports = { run, emit };
