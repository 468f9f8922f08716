'use strict';
// The status an SDK reports on every poll (DESIGN §5): `<state>[: <reason>]`, and the
// object status() returns around it (docs/sdk/README.md, "One vocabulary").

const STATES = new Set(['profiling', 'disabled', 'waiting', 'unavailable', 'declined', 'error']);
// The reason is at most 200 printable ASCII characters (docs/control-plane.md).
const REASON_MAX = 200;

/** Printable ASCII only (others become '?'), at most 200 characters. */
function cleanReason(reason) {
  return String(reason)
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, REASON_MAX)
    .trim();
}

/** Formats a status string; an unknown state becomes `error`. */
function formatStatus(state, reason) {
  const s = STATES.has(state) ? state : 'error';
  const r = reason == null ? '' : cleanReason(reason);
  return r ? `${s}: ${r}` : s;
}

/** True when s follows the grammar (used by tests). */
function isValidStatus(s) {
  const m = /^([a-z]+)(?:: ([\x20-\x7e]{1,200}))?$/.exec(s);
  return m !== null && STATES.has(m[1]);
}

/**
 * Splits a status string (as formatStatus makes it) into {state, reason}: the part before
 * the first `: ` and the part after it, or "" when there is none.
 */
function splitStatus(s) {
  const i = s.indexOf(': ');
  return i < 0 ? { state: s, reason: '' } : { state: s.slice(0, i), reason: s.slice(i + 2) };
}

/**
 * What status() returns: a frozen object whose own fields are, in this order (the same in
 * every SDK, docs/sdk/README.md):
 *   status            string, `<state>[: <reason>]`, exactly as sent on each poll
 *   state             string, one of STATES
 *   reason            string, the part after `<state>: `, or ""
 *   interval_us       number, the effective sampling interval, µs
 *   service, instance string, the names in use; null before start() (or bad options)
 *   profiles_sent     number, profiles the server stored (201, or 200 for a duplicate)
 *   profiles_dropped  number, profiles given up (queue overflow, 4xx, 409, left at stop)
 *   profiles_queued   number, profiles waiting to upload (the one in flight included)
 *   samples           number, samples in the profiles made so far (`(idle)` left out)
 *   last_error        string, the last problem seen, or null when none
 * Deprecated, for one release: it converts to the status string (`${s}`, String(s),
 * s == 'profiling'); `===` against a string is false, compare s.status or s.state.
 */
class Status {
  /**
   * f: {status (a valid status string), interval_us, service?, instance?, profiles_sent?,
   * profiles_dropped?, profiles_queued?, samples?, last_error?}; a missing counter is 0, a
   * missing name or last_error null.
   */
  constructor(f) {
    const { state, reason } = splitStatus(f.status);
    this.status = f.status;
    this.state = state;
    this.reason = reason;
    this.interval_us = f.interval_us;
    this.service = f.service == null ? null : f.service;
    this.instance = f.instance == null ? null : f.instance;
    this.profiles_sent = f.profiles_sent || 0;
    this.profiles_dropped = f.profiles_dropped || 0;
    this.profiles_queued = f.profiles_queued || 0;
    this.samples = f.samples || 0;
    this.last_error = f.last_error == null ? null : f.last_error;
    Object.freeze(this);
  }

  /** The status string (deprecated string form of status()). */
  toString() {
    return this.status;
  }

  /** The status string, whatever the hint: `${s}`, s + '', s == 'profiling'. */
  [Symbol.toPrimitive]() {
    return this.status;
  }
}

module.exports = {
  formatStatus,
  cleanReason,
  isValidStatus,
  splitStatus,
  Status,
  STATES,
  REASON_MAX,
};
