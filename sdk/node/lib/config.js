'use strict';
// The SDK's config: compiled-in clamps, validation of what the control plane sends, and the
// poll loop of docs/control-plane.md (etag + held long poll, fail closed).

const { request, joinUrl, serverMessage } = require('./uploader');

// ---- Bounds compiled into the SDK (DESIGN §5). Whatever the server says, these hold. ----

/** The SDK's bounds, each written once here (docs/sdk/README.md: Limits). */
const LIMITS = Object.freeze({
  // Sampling interval, µs. V8 interrupts the JS thread with a signal and walks its stack on
  // every tick; below 1 ms that costs real CPU and skews what it measures (DESIGN §5: Node
  // floor 1 ms).
  sampling_interval_min_us: 1000,
  // A coarser interval than 1 s gives fewer than 10 samples in the shortest upload interval,
  // too few to rank anything; it also keeps the value inside V8's int32 argument.
  sampling_interval_max_us: 1000000,
  // Upload interval, s. Under 10 s the per-profile cost (session start, encode, an HTTP
  // request) stops being negligible; over 300 s a crash loses too much and issues show late.
  upload_interval_min_s: 10,
  upload_interval_max_s: 300,
  // Stack depth, frames. 256 leaf-side frames name every function a user acts on; deeper
  // stacks are recursion whose root side only inflates the profile.
  stack_depth_min: 1,
  stack_depth_max: 256,
  // Poll interval, s. At least 1 s, so a spoofed or broken control plane cannot make the SDK
  // spin; at most 10 min, so a toggle is never ignored for longer than that.
  poll_interval_min_s: 1,
  poll_interval_max_s: 600,
  // Compressed upload body, bytes (DESIGN §5). Bigger profiles keep their heaviest stacks.
  upload_max_bytes: 4 * 1024 * 1024,
  // A config is ~200 bytes; anything over 64 KiB is not a config and is abandoned unread.
  config_max_bytes: 64 * 1024,
  // An etag is sent back in every poll's query: at most this many characters, each printable
  // ASCII but '"' (ETAG_RE). The server's are 64 hex digits; a longer one (up to the 64 KiB
  // body) makes the server refuse every later poll with 414, and the SDK would stay off for
  // good.
  etag_max_len: 256,
  // The server clamps `wait` to [0, 30] s (DESIGN §5); asking for more is pointless.
  wait_max_s: 30,
  // A poll request that has not completed this long after its `wait` is abandoned, ms.
  poll_grace_ms: 10000,
  // A held request that returned because of a change may be followed at once, but never
  // sooner than this after the previous request started, ms (docs/control-plane.md).
  poll_min_gap_ms: 1000,
  // Fail closed after this many poll intervals without a valid config (200 or 304).
  stale_poll_intervals: 3,
});

// An etag's characters: RFC 9110's etagc without obs-text (printable ASCII but '"').
const ETAG_RE = /^[\x21\x23-\x7e]*$/;
// A UTF-16 surrogate without its pair (String.prototype.isWellFormed is Node 20+).
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when v can be sent back as a poll's etag (see LIMITS.etag_max_len). */
function validEtag(v) {
  return typeof v === 'string' && v.length <= LIMITS.etag_max_len && ETAG_RE.test(v);
}

// The server's defaults for runtime=node, used before any config has arrived and for
// numeric fields a config leaves out.
const DEFAULTS = Object.freeze({
  enabled: false,
  type: 'cpu',
  sampling_interval_us: 10000,
  upload_interval_s: 60,
  max_stack_depth: 256,
  poll_interval_s: 10,
});

// Each numeric config field: [lowest, highest, integral].
const NUMERIC_FIELDS = {
  sampling_interval_us: [LIMITS.sampling_interval_min_us, LIMITS.sampling_interval_max_us, true],
  upload_interval_s: [LIMITS.upload_interval_min_s, LIMITS.upload_interval_max_s, false],
  max_stack_depth: [LIMITS.stack_depth_min, LIMITS.stack_depth_max, true],
  poll_interval_s: [LIMITS.poll_interval_min_s, LIMITS.poll_interval_max_s, false],
};

/** Clamps x into [lo, hi]; integral fields are rounded first. x must be a non-NaN number. */
function clamp(x, lo, hi, integral) {
  if (integral && Number.isFinite(x)) x = Math.round(x);
  return x < lo ? lo : x > hi ? hi : x;
}

/**
 * Validates and clamps a parsed config. Returns {ok: true, config} with every number inside
 * the compiled bounds, or {ok: false, reason}. A wrong type (including null) or NaN makes the
 * whole config invalid; out-of-range numbers (±Infinity included) are clamped to the nearest
 * bound; a missing numeric field takes the Node default; `enabled` is required; `type` is
 * any string (a request, never malformed).
 */
function validateConfig(obj) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    return { ok: false, reason: 'config is not a JSON object' };
  }
  if (typeof obj.enabled !== 'boolean') return { ok: false, reason: 'enabled is not a boolean' };
  const config = { enabled: obj.enabled, type: DEFAULTS.type, etag: null };
  if ('type' in obj) {
    if (typeof obj.type !== 'string') return { ok: false, reason: 'type is not a string' };
    // as every SDK (sdk/testdata/config_fuzz/invalid-lone-surrogate-*)
    if (LONE_SURROGATE.test(obj.type)) {
      return { ok: false, reason: 'type is not valid Unicode (a lone surrogate)' };
    }
    config.type = obj.type;
  }
  for (const [name, [lo, hi, integral]] of Object.entries(NUMERIC_FIELDS)) {
    if (!(name in obj)) {
      config[name] = DEFAULTS[name];
      continue;
    }
    const v = obj[name];
    if (typeof v !== 'number' || Number.isNaN(v)) {
      return { ok: false, reason: `${name} is not a number` };
    }
    config[name] = clamp(v, lo, hi, integral);
  }
  if ('etag' in obj) {
    if (typeof obj.etag !== 'string') return { ok: false, reason: 'etag is not a string' };
    if (!validEtag(obj.etag)) {
      const reason = `etag is not at most ${LIMITS.etag_max_len} printable ASCII characters`;
      return { ok: false, reason };
    }
    config.etag = obj.etag;
  }
  return { ok: true, config };
}

/**
 * Parses a config body (a Buffer or string). Malformed JSON (NaN, a truncated body, ...) is
 * an invalid config, as in validateConfig.
 */
function parseConfig(body) {
  let obj;
  try {
    obj = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch (e) {
    return { ok: false, reason: 'malformed JSON' };
  }
  return validateConfig(obj);
}

/**
 * Polls GET /api/v1/sdk/config. Calls hooks.onConfig(config, {changed, fresh}) for every valid
 * answer (a 304 repeats the last config with fresh=false), hooks.onInvalid(reason) for an
 * invalid one, hooks.onStale() when no valid config has arrived for 3 poll intervals, and
 * hooks.onError(reason) for a failed request. A 4xx answer or an invalid config forgets the
 * etag (the next poll asks afresh); a 5xx or a network error keeps it. hooks.query() returns the extra query
 * parameters of each poll (status, interval_us). Never throws; its timers are unref'd.
 */
class Poller {
  constructor({ server, key, params, hooks, now = () => performance.now() }) {
    this.server = server;
    this.key = key;
    this.params = params; // service, instance, runtime, ... (fixed for the SDK's life)
    this.hooks = hooks;
    this.now = now;
    this.config = null; // last valid config (clamped)
    this.etag = null;
    this.pollIntervalMs = DEFAULTS.poll_interval_s * 1000;
    this.lastStart = -Infinity; // when the last request started
    this.lastValid = now(); // the stale clock runs from start()
    this.timer = null;
    this.watchdog = null;
    this.inflight = null; // abort function of the request in flight
    this.running = false;
    this.requests = 0; // requests started (diagnostics, tests)
    this._changed = false; // the last answer was a held request returning on a change
  }

  start() {
    this.running = true;
    this.lastValid = this.now();
    this._armWatchdog();
    this._schedule(0);
  }

  stop() {
    this.running = false;
    clearTimeout(this.timer);
    clearTimeout(this.watchdog);
    if (this.inflight) this.inflight();
    this.inflight = null;
  }

  /** Forgets the etag, so the next poll gets a full 200 at once (used after a 409 upload). */
  forgetEtag() {
    this.etag = null;
  }

  _schedule(delayMs) {
    clearTimeout(this.timer);
    if (!this.running) return;
    this.timer = setTimeout(() => this._poll(), Math.max(0, delayMs));
    this.timer.unref();
  }

  /** Next start: one poll interval after the last start (after a change: 1 s). */
  _scheduleNext(changed) {
    const gap = changed ? LIMITS.poll_min_gap_ms : this.pollIntervalMs;
    this._schedule(this.lastStart + gap - this.now());
  }

  _armWatchdog() {
    clearTimeout(this.watchdog);
    if (!this.running) return;
    const deadline = this.lastValid + LIMITS.stale_poll_intervals * this.pollIntervalMs;
    this.watchdog = setTimeout(() => {
      if (!this.running) return;
      if (this.now() >= this.lastValid + LIMITS.stale_poll_intervals * this.pollIntervalMs - 5) {
        this._call('onStale');
        this.lastValid = this.now(); // report again only after another 3 intervals
      }
      this._armWatchdog();
    }, Math.max(0, deadline - this.now()));
    this.watchdog.unref();
  }

  _call(name, ...args) {
    try {
      this.hooks[name](...args);
    } catch (e) {
      // A hook must not break the loop; hooks catch their own errors anyway.
    }
  }

  _url() {
    const pollS = Math.floor(this.pollIntervalMs / 1000);
    const waitS = this.etag ? Math.min(LIMITS.wait_max_s, pollS) : 0;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(this.params)) if (v != null && v !== '') q.set(k, String(v));
    let extra = {};
    try {
      extra = this.hooks.query();
    } catch (e) {
      extra = {};
    }
    for (const [k, v] of Object.entries(extra)) if (v != null) q.set(k, String(v));
    if (this.etag) q.set('etag', this.etag);
    q.set('wait', String(waitS));
    return { url: joinUrl(this.server, '/api/v1/sdk/config') + '?' + q.toString(), waitS };
  }

  _poll() {
    if (!this.running || this.inflight) return;
    this.lastStart = this.now();
    this.requests++;
    const sentEtag = this.etag;
    const { url, waitS } = this._url();
    const { promise, abort } = request({
      url,
      method: 'GET',
      headers: { Authorization: `Bearer ${this.key}` },
      timeoutMs: waitS * 1000 + LIMITS.poll_grace_ms,
      maxBody: LIMITS.config_max_bytes,
      unref: true,
    });
    this.inflight = abort;
    promise
      .then(
        (res) => this._answer(res, sentEtag),
        (err) => this._failed(err),
      )
      .catch(() => {})
      .then(() => {
        this.inflight = null;
        const changed = this._changed;
        this._changed = false;
        this._scheduleNext(changed);
      });
  }

  _answer(res, sentEtag) {
    this._changed = false;
    if (!this.running) return;
    if (res.status === 304) {
      if (!this.config) return this._call('onError', 'HTTP 304 without a config');
      this._valid();
      this._call('onConfig', this.config, { changed: false, fresh: false });
      return;
    }
    if (res.tooBig) {
      this.etag = null; // an invalid config: ask for the full config again next time
      return this._call('onInvalid', `config body over ${LIMITS.config_max_bytes} bytes`);
    }
    if (res.status !== 200) {
      // A refusal (4xx: key revoked, wrong scope, ...) forgets the etag: once its cause is
      // fixed, the next poll gets a full 200 at once instead of being held and answered 304.
      // A 5xx or a network error keeps it: the server is unavailable, it refused nothing.
      if (res.status >= 400 && res.status < 500) this.etag = null;
      const m = serverMessage(res.body);
      return this._call('onError', `config poll answered HTTP ${res.status}${m ? `: ${m}` : ''}`);
    }
    const parsed = parseConfig(res.body);
    if (!parsed.ok) {
      this.etag = null; // ask for the full config again next time
      return this._call('onInvalid', parsed.reason);
    }
    const config = parsed.config;
    const header = res.headers.etag;
    if (config.etag == null && typeof header === 'string') {
      const h = header.replace(/^W\/|"/g, '');
      if (validEtag(h)) config.etag = h; // a malformed header is ignored
    }
    this.etag = config.etag;
    this._changed = sentEtag != null && config.etag !== sentEtag;
    this.config = config;
    this.pollIntervalMs = config.poll_interval_s * 1000;
    this._valid();
    this._call('onConfig', config, { changed: this._changed, fresh: true });
  }

  _valid() {
    this.lastValid = this.now();
    this._armWatchdog();
  }

  _failed(err) {
    this._changed = false;
    if (!this.running) return;
    this._call('onError', `config poll failed: ${(err && (err.code || err.message)) || err}`);
  }
}

module.exports = {
  LIMITS,
  DEFAULTS,
  validateConfig,
  validEtag,
  parseConfig,
  Poller,
};
