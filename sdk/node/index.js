'use strict';
// @roottrace/node: continuous CPU profiling of a Node service for RootTrace (docs/sdk/node.md).

const { Profiler } = require('./lib/profiler');

let current = null; // the running profiler, if any

/**
 * Starts the SDK: it polls the control plane and profiles the main JS thread while the
 * service's profiling is on (off by default, DESIGN §5). opts: {server, key, service,
 * version?, instance?, root?}. Returns a profiler with stop() (a promise that resolves after
 * the final upload, or after 5 s) and status(). Never throws: bad options give a profiler
 * whose status is `error: ...`. While one is running, start() returns it.
 */
function start(opts) {
  if (current && !current.stopped) return current;
  let p;
  try {
    p = new Profiler(opts || {});
    p.start();
  } catch (e) {
    p = new Profiler(null); // a stopped profiler reporting the error
    p.reason = `start failed: ${(e && e.message) || e}`;
  }
  current = p;
  return p;
}

/** The status string of the profiler last started (`disabled: not started` before any). */
function status() {
  return current ? current.status() : 'disabled: not started';
}

/** Stops the profiler last started; resolves after its final upload (at most 5 s). */
function stop() {
  return current ? current.stop() : Promise.resolve();
}

module.exports = { start, status, stop };
