'use strict';
// One running SDK: wires config (poll), sampler, encoder, uploader and status together and
// holds the fail-closed state machine of DESIGN §5.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const config = require('./config');
const { Sampler, DeclinedError, aggregate, frameNamer, findAppRoot, mainScript } = require('./sampler');
const { encodeWithin } = require('./encoder');
const { Uploader } = require('./uploader');
const { formatStatus, cleanReason, Status, REASON_MAX } = require('./status');
const { nameProblem, safeNamePart, NAME_MAX_BYTES } = require('./names');

const SDK_VERSION = require('../package.json').version;
// stop() and the exit flush wait at most this long (DESIGN §5).
const FLUSH_TIMEOUT_MS = 5000;
// Reasons that the last poll error is appended to (as `<reason> (<poll error>)`).
const NO_CONFIG_YET = 'no config yet';

/**
 * `<hostname>-<pid>-<4 random hex>` (DESIGN §5), always a name the server accepts: the
 * suffix takes at most 30 bytes, the host name the rest.
 */
function defaultInstance() {
  let host = '';
  try {
    host = safeNamePart(os.hostname(), NAME_MAX_BYTES - 30);
  } catch (e) {
    host = '';
  }
  return `${host || 'localhost'}-${process.pid}-${crypto.randomBytes(2).toString('hex')}`;
}

/** Checks start()'s options; returns an error reason or null. */
function checkOptions(o) {
  if (!o || typeof o !== 'object') return 'start() needs an options object';
  if (typeof o.server !== 'string' || !/^https?:\/\/[^/]/i.test(o.server)) {
    return 'option server must be an http(s) URL';
  }
  if (typeof o.key !== 'string' || o.key === '') return 'option key is missing';
  if (o.service == null) return 'option service is missing';
  if (typeof o.service !== 'string') return 'option service must be a string';
  const bad = nameProblem(o.service);
  if (bad) return `invalid service name (${bad})`;
  for (const k of ['version', 'instance', 'root']) {
    if (o[k] != null && typeof o[k] !== 'string') return `option ${k} must be a string`;
  }
  if (o.instance != null) {
    const why = nameProblem(o.instance);
    if (why) return `invalid instance name (${why})`;
  }
  return null;
}

/** Whether this thread can profile itself: null if so, else the reason it cannot. */
function unavailableReason(inspector) {
  try {
    if (!require('node:worker_threads').isMainThread) return 'not the main thread (worker)';
  } catch (e) {
    // no worker_threads: this is the main thread
  }
  if (!inspector || typeof inspector.Session !== 'function') return 'node:inspector not available';
  return null;
}

function realpath(p) {
  try {
    return fs.realpathSync(p);
  } catch (e) {
    return p;
  }
}

function loadInspector() {
  try {
    return require('node:inspector');
  } catch (e) {
    return null;
  }
}

class Profiler {
  /**
   * opts: {server, key, service, version?, instance?, root?}. Internal, for tests:
   * opts._createSession replaces `new inspector.Session()`.
   */
  constructor(opts) {
    this.state = 'waiting';
    this.reason = NO_CONFIG_YET;
    this.pollError = null; // why the last poll gave no valid config (shown while waiting or stale)
    this.stale = false; // stopped because no valid config came for 3 poll intervals
    this.lastPollValid = true; // the last poll brought a valid config (200 or 304)
    this.config = null; // last valid config, clamped
    this.conflict = false; // a 409 stopped profiling; a fresh 200 must say enabled again
    this.stopped = false;
    this.stopping = null;
    this.chain = Promise.resolve(); // serialises sampler operations
    this.rotateTimer = null;
    this.uploadIntervalMs = 0; // of the profile running
    this.service = null; // the service name in use (null when the options were refused)
    this.samples = 0; // V8 samples in the profiles made so far, (idle) left out
    this.lastError = null; // the last problem seen, from any part (status().last_error)
    this.stats = {
      profiles: 0, // profiles handed to the uploader
      empty: 0, // of which had no CPU samples (idle)
      stuck: 0, // profiles dropped because V8 returned no samples at all
      oversize: 0, // profiles that lost stacks to the 4 MiB limit
      negativeDeltas: 0, // timeDeltas clamped to 0
      declines: 0,
      lastMedianDeltaUs: null, // achieved sampling interval of the last profile
      lastError: null,
    };
    const bad = checkOptions(opts);
    if (bad) {
      this.state = 'error';
      this.reason = bad;
      this.lastError = bad;
      this.stopped = true;
      return;
    }
    const inspector = opts._createSession ? {} : loadInspector();
    this.unavailable = opts._createSession ? null : unavailableReason(inspector);
    if (this.unavailable) {
      this.state = 'unavailable';
      this.reason = this.unavailable;
    }
    this.sampler = new Sampler({ createSession: opts._createSession || (() => new inspector.Session()) });
    this.root = opts.root ? realpath(path.resolve(opts.root)) : findAppRoot(mainScript());
    this.nameOf = frameNamer(this.root);
    this.service = opts.service;
    // the instance name in use (unset when the options were refused)
    this.instance = opts.instance != null ? opts.instance : defaultInstance();
    const ids = {
      service: opts.service,
      instance: this.instance,
      runtime: 'node',
      runtime_version: process.version,
      sdk_version: SDK_VERSION,
      version: opts.version || undefined,
    };
    this.poller = new config.Poller({
      server: opts.server,
      key: opts.key,
      params: ids,
      hooks: {
        query: () => ({ status: this.statusText(), interval_us: this.intervalUs() }),
        onConfig: (c, info) => {
          // A valid answer after failed or invalid polls: the server is back, so what is
          // queued goes now rather than when the upload backoff (up to 60 s) ends.
          if (!this.lastPollValid && this.uploader) this.uploader.retryNow();
          this.lastPollValid = true;
          this._onConfig(c, info);
        },
        onInvalid: (reason) => {
          this.lastPollValid = false;
          this.pollError = null;
          this.stale = false;
          this.lastError = `invalid config: ${reason}`;
          this._failClosed('error', this.lastError);
        },
        onStale: () => {
          const n = config.LIMITS.stale_poll_intervals;
          this._failClosed('error', `no valid config for ${n} poll intervals`);
          this.stale = !this.stopped && !this.unavailable;
          // The poll error, if any, is the problem; else (a poll still in flight) this is.
          if (this.stale && !this.pollError) this.lastError = this.reason;
        },
        onError: (reason) => {
          this.lastPollValid = false;
          this.stats.lastError = reason;
          this.lastError = reason;
          this.pollError = reason;
        },
      },
    });
    this.uploader = new Uploader({
      server: opts.server,
      key: opts.key,
      params: ids,
      hooks: {
        onConflict: () => this._onConflict(),
        onError: (reason) => {
          this.lastError = reason;
        },
      },
    });
    this._beforeExit = () => {
      this.stop();
    };
  }

  /** Starts polling (profiling begins once a valid config says enabled: true). */
  start() {
    if (this.stopped) return this;
    process.on('beforeExit', this._beforeExit);
    this.poller.start();
    return this;
  }

  /**
   * The status: a frozen Status (lib/status.js) with the fields every SDK shares, in order:
   * status (statusText()), state, reason, interval_us (µs), service, instance,
   * profiles_sent, profiles_dropped, profiles_queued, samples, last_error (or null).
   */
  status() {
    const up = this.uploader;
    const st = up ? up.stats : null;
    return new Status({
      status: this.statusText(),
      interval_us: this.intervalUs(),
      service: this.service,
      instance: this.instance,
      profiles_sent: st ? st.uploaded : 0,
      profiles_dropped: st ? st.dropped + st.refused + st.conflicts + up.abandoned : 0,
      profiles_queued: up ? up.queue.length : 0,
      samples: this.samples,
      last_error: this.lastError,
    });
  }

  /**
   * The status string (`<state>[: <reason>]`), as sent on every poll. While no config has
   * come yet, or after 3 poll intervals without one, the reason ends with why the last poll
   * failed, the server's message included (`waiting: no config yet (config poll answered
   * HTTP 403: ...)`), cut so the whole reason stays within 200 printable ASCII characters.
   */
  statusText() {
    const shows = (this.state === 'waiting' && this.reason === NO_CONFIG_YET) || (this.state === 'error' && this.stale);
    if (shows && this.pollError && this.reason) {
      const room = REASON_MAX - this.reason.length - 3;
      const err = cleanReason(this.pollError).slice(0, Math.max(0, room)).trim();
      if (err) return formatStatus(this.state, `${this.reason} (${err})`);
    }
    return formatStatus(this.state, this.reason);
  }

  /** The effective sampling interval, µs: the running profile's, else the config's. */
  intervalUs() {
    if (this.sampler && this.sampler.running) return this.sampler.intervalUs;
    return (this.config || config.DEFAULTS).sampling_interval_us;
  }

  /**
   * Stops profiling, uploads the last profile and what is queued, and resolves when done or
   * after 5 s. Never rejects; calling it again returns the same promise.
   */
  stop() {
    if (this.stopping) return this.stopping;
    if (!this.poller) return (this.stopping = Promise.resolve());
    this.stopped = true;
    process.removeListener('beforeExit', this._beforeExit);
    this.poller.stop();
    clearTimeout(this.rotateTimer);
    const deadline = performance.now() + FLUSH_TIMEOUT_MS;
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
    });
    const work = this._serial(async () => {
      const r = await this.sampler.end();
      if (r) await this._ship(r);
    }).then(() => this.uploader.flush(deadline));
    this.stopping = Promise.race([work, timeout])
      .catch(() => {})
      .then(() => {
        clearTimeout(timer);
        this.uploader.close();
        if (this.state === 'profiling' || this.state === 'waiting') {
          this.state = 'disabled';
          this.reason = 'stopped';
        }
      });
    return this.stopping;
  }

  /** Diagnostics: counters and the current figures. */
  info() {
    return {
      status: this.statusText(),
      instance: this.instance,
      root: this.root,
      interval_us: this.intervalUs(),
      config: this.config,
      polls: this.poller ? this.poller.requests : 0,
      queued: this.uploader ? this.uploader.queue.length : 0,
      uploads: this.uploader ? { ...this.uploader.stats, lastError: this.uploader.lastError } : null,
      ...this.stats,
    };
  }

  // ---- internals ----

  _serial(fn) {
    const next = this.chain.then(fn);
    this.chain = next.catch((e) => {
      this.stats.lastError = String((e && e.message) || e);
      this.lastError = this.stats.lastError;
    });
    return next;
  }

  _onConfig(c, { fresh }) {
    if (this.stopped) return;
    this.pollError = null;
    this.stale = false;
    const prev = this.config;
    this.config = c;
    if (!c.enabled) {
      this.conflict = false;
      return this._failClosed('disabled', null);
    }
    if (this.conflict && !fresh) return; // a 304 repeats the config the 409 contradicted
    this.conflict = false;
    if (this.unavailable) return;
    const reason = c.type === 'cpu' ? null : `${c.type} not supported, sending cpu`;
    this._serial(async () => {
      if (this.stopped || !this.config || !this.config.enabled) return;
      if (!this.sampler.running) return this._begin(reason);
      this.reason = reason;
      const interval = c.sampling_interval_us;
      if (interval !== this.sampler.intervalUs) return this._rotate(); // takes effect now
      if (!prev || c.upload_interval_s * 1000 !== this.uploadIntervalMs) this._scheduleRotation();
    });
  }

  /** Starts a profile under the current config; on failure the state says declined. */
  async _begin(reason) {
    try {
      await this.sampler.begin(this.config.sampling_interval_us);
    } catch (e) {
      this.stats.declines++;
      this.state = 'declined';
      this.reason = e instanceof DeclinedError ? 'V8 profiler in use' : String(e.message || e);
      this.stats.lastError = String(e.message || e);
      this.lastError = this.stats.lastError;
      return; // the next poll (one poll interval on) tries again
    }
    this.state = 'profiling';
    this.reason = reason;
    this._scheduleRotation();
  }

  _scheduleRotation() {
    clearTimeout(this.rotateTimer);
    this.uploadIntervalMs = this.config.upload_interval_s * 1000;
    this.rotateTimer = setTimeout(() => this._serial(() => this._rotate()), this.uploadIntervalMs);
    this.rotateTimer.unref();
  }

  /** Ends the running profile, starts the next at once (back to back), then ships the first. */
  async _rotate() {
    if (!this.sampler.running) return;
    const r = await this.sampler.end();
    if (!this.stopped && this.config && this.config.enabled) await this._begin(this.reason);
    if (r) await this._ship(r);
  }

  /** Stops profiling (the partial profile is dropped) and sets the state. */
  _failClosed(state, reason) {
    if (this.stopped) return;
    if (!this.unavailable) {
      this.state = state;
      this.reason = reason;
    }
    clearTimeout(this.rotateTimer);
    this._serial(async () => {
      await this.sampler.end();
    });
  }

  _onConflict() {
    if (this.stopped) return;
    this.conflict = true;
    this.poller.forgetEtag();
    this._failClosed('disabled', 'upload refused (409)');
  }

  /** Turns an ended profile into a gzip pprof and queues it. */
  async _ship(r) {
    if (r.stuck) {
      this.stats.stuck++; // not a true "zero CPU" profile: leave it out
      return;
    }
    const depth = this.config ? this.config.max_stack_depth : config.LIMITS.stack_depth_max;
    const agg = aggregate(r.profile, { nameOf: this.nameOf, maxDepth: depth });
    this.stats.negativeDeltas += agg.negative;
    this.stats.lastMedianDeltaUs = agg.medianDeltaUs;
    const enc = await encodeWithin(
      {
        type: 'cpu',
        time_nanos: r.timeNanos,
        duration_nanos: r.durationNanos,
        period: r.intervalUs * 1000,
        samples: agg.samples,
      },
      config.LIMITS.upload_max_bytes,
    );
    if (enc.samplesKept < enc.samplesTotal) this.stats.oversize++;
    if (!enc.body) return;
    if (agg.samples.length === 0) this.stats.empty++;
    this.stats.profiles++;
    this.samples += enc.countKept;
    const params = { profile_id: crypto.randomUUID(), process_cpu_ns: r.processCpuNs };
    if (r.threadCpuNs != null) params.thread_cpu_ns = r.threadCpuNs;
    this.uploader.enqueue(enc.body, params);
  }
}

module.exports = { Profiler, defaultInstance, checkOptions, SDK_VERSION, FLUSH_TIMEOUT_MS };
