'use strict';
// @roottrace/node: continuous CPU profiling of a Node service for RootTrace (docs/sdk/node.md).

const { Profiler } = require('./lib/profiler');
const { DEFAULTS } = require('./lib/config');
const { Status, formatStatus } = require('./lib/status');

let current = null; // the running profiler, if any

/**
 * Starts the SDK: it polls the control plane and profiles the main JS thread while the
 * service's profiling is on (off by default, DESIGN §5). opts: {server, key, service,
 * version?, instance?, root?}. Returns a profiler with stop() (a promise that resolves after
 * the final upload, or after 5 s), status() (as the module's status()) and info(). Never
 * throws: bad options give a profiler whose status is `error: ...`. While one is running,
 * start() returns it.
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
    p.lastError = p.reason;
  }
  current = p;
  return p;
}

/**
 * The status of the profiler last started: a frozen object with, in this order, status
 * (`<state>[: <reason>]`, as sent on every poll), state, reason (after `<state>: `, or ""),
 * interval_us (the effective sampling interval, µs), service, instance (null before
 * start()), profiles_sent, profiles_dropped, profiles_queued, samples, last_error (null when
 * none); see lib/status.js. Before any start(): `disabled: not started`, counters 0. It
 * converts to the status string (`${s}`, String(s), s == 'profiling'; deprecated).
 */
function status() {
  if (current) return current.status();
  return new Status({
    status: formatStatus('disabled', 'not started'),
    interval_us: DEFAULTS.sampling_interval_us,
  });
}

/** Stops the profiler last started; resolves after its final upload (at most 5 s). */
function stop() {
  return current ? current.stop() : Promise.resolve();
}

module.exports = { start, status, stop };
