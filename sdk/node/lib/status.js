'use strict';
// The status an SDK reports on every poll (DESIGN §5): `<state>[: <reason>]`.

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

module.exports = { formatStatus, cleanReason, isValidStatus, STATES, REASON_MAX };
