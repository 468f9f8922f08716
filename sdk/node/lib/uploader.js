'use strict';
// Uploads profiles: POST /api/v1/profiles with a bounded queue, retries with backoff while
// the server is away, and the answers of docs/control-plane.md (201/200 stored, 409 stop,
// other 4xx drop, 5xx and network errors retry). Also holds the one HTTP helper the SDK uses.

const http = require('node:http');
const https = require('node:https');

// Profiles kept while the server is away; the oldest is dropped first (DESIGN §5).
const QUEUE_MAX = 8;
// One upload request may take this long (a 4 MiB body over a slow link included).
const UPLOAD_TIMEOUT_MS = 30000;
// Retry delays after a 5xx or a network error: 1 s doubling to 60 s, with jitter.
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 60000;
// Answers to uploads are small JSON; more than this is not read.
const ANSWER_MAX_BYTES = 64 * 1024;

// No keep-alive: a request every few seconds does not need a pool, and a pooled socket
// would outlive the SDK's own unref() bookkeeping.
const agents = {
  'http:': new http.Agent({ keepAlive: false }),
  'https:': new https.Agent({ keepAlive: false }),
};

/** Joins the server's base URL (which may carry a path prefix) and an API path. */
function joinUrl(server, path) {
  return String(server).replace(/\/+$/, '') + path;
}

/**
 * One HTTP request. Returns {promise, abort, ref}: promise resolves to {status, headers, body,
 * tooBig} (body a Buffer of at most maxBody bytes; tooBig when the answer was longer and was
 * abandoned) and rejects on network errors, on timeoutMs elapsing (the whole exchange, a slow
 * drip included) and on abort(). With unref, neither the socket nor the timer keeps the
 * process alive; ref() undoes that (final flush).
 */
function request({ url, method, headers = {}, body = null, timeoutMs, maxBody, unref = true }) {
  let req = null;
  let socket = null;
  let timer = null;
  let settled = false;
  let refd = !unref;
  let abort = () => {};
  const promise = new Promise((resolve, reject) => {
    const done = (fn, v) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn(v);
    };
    abort = (why) => {
      const err = new Error(why || 'aborted');
      err.code = why ? 'ETIMEDOUT' : 'EABORTED';
      done(reject, err);
      if (req) req.destroy();
    };
    let u;
    try {
      u = new URL(url);
    } catch (e) {
      return done(reject, e);
    }
    const mod = u.protocol === 'https:' ? https : u.protocol === 'http:' ? http : null;
    if (!mod) return done(reject, new Error(`unsupported protocol ${u.protocol}`));
    const h = { ...headers };
    if (body) h['Content-Length'] = String(body.length);
    try {
      req = mod.request(u, { method, headers: h, agent: agents[u.protocol] });
    } catch (e) {
      return done(reject, e);
    }
    timer = setTimeout(() => abort('request timed out'), timeoutMs);
    if (!refd) timer.unref();
    req.on('socket', (s) => {
      socket = s;
      if (!refd) s.unref();
    });
    req.on('error', (e) => done(reject, e));
    req.on('response', (res) => {
      const chunks = [];
      let size = 0;
      res.on('data', (c) => {
        size += c.length;
        if (size > maxBody) {
          done(resolve, { status: res.statusCode, headers: res.headers, body: null, tooBig: true });
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      res.on('end', () =>
        done(resolve, {
          status: res.statusCode,
          headers: res.headers,
          body: Buffer.concat(chunks),
          tooBig: false,
        }),
      );
      res.on('error', (e) => done(reject, e));
      res.on('aborted', () => done(reject, new Error('response aborted')));
    });
    req.end(body || undefined);
  });
  const ref = () => {
    refd = true;
    if (socket) socket.ref();
    if (timer) timer.ref();
  };
  return { promise, abort: () => abort(), ref };
}

/**
 * The upload queue. enqueue() adds a gzip pprof body with its per-profile query parameters;
 * the queue sends one at a time. hooks.onConflict() is called on a 409, hooks.onError(reason)
 * on a refused or failed upload (not on one close() ends). Never throws.
 */
class Uploader {
  constructor({ server, key, params, hooks = {}, maxQueue = QUEUE_MAX }) {
    this.server = server;
    this.key = key;
    this.params = params; // query parameters common to every upload
    this.hooks = hooks;
    this.maxQueue = maxQueue;
    this.queue = []; // [{body, params}], oldest first; queue[0] may be in flight
    this.sending = null; // the item in flight
    this.handle = null; // its request handle
    this.failures = 0; // consecutive retryable failures (backoff exponent)
    this.retryTimer = null;
    this.flushing = false; // stop()/exit: requests keep the process alive
    this.waiters = []; // resolvers of flush()
    this.closed = false;
    // uploaded: 200 or 201 (duplicates: of which 200); dropped: the oldest, beyond maxQueue;
    // refused: other 4xx; conflicts: 409; retries: 5xx or network errors.
    this.stats = { uploaded: 0, duplicates: 0, dropped: 0, refused: 0, conflicts: 0, retries: 0 };
    this.abandoned = 0; // profiles still queued at close(), never sent
    this.lastError = null;
  }

  /** Queues one profile; drops the oldest queued (not in flight) beyond maxQueue. */
  enqueue(body, params) {
    if (this.closed) return;
    this.queue.push({ body, params });
    while (this.queue.length > this.maxQueue) {
      const i = this.queue[0] === this.sending ? 1 : 0;
      this.queue.splice(i, 1);
      this.stats.dropped++;
    }
    this._pump();
  }

  /**
   * Sends what is queued now, ignoring backoff, and resolves when the queue is empty, when a
   * send fails with a retryable error, or at deadlineMs (a performance.now() time),
   * whichever comes first. Never rejects.
   */
  flush(deadlineMs) {
    this.flushing = true;
    if (this.handle) this.handle.ref();
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    return new Promise((resolve) => {
      if (this.queue.length === 0) return resolve();
      const timer = setTimeout(finish, Math.max(0, deadlineMs - performance.now()));
      const self = this;
      function finish() {
        clearTimeout(timer);
        const i = self.waiters.indexOf(finish);
        if (i >= 0) self.waiters.splice(i, 1);
        resolve();
      }
      this.waiters.push(finish);
      this._pump();
    });
  }

  /** Ends a retry backoff in progress (the server is back): sends what is queued now. */
  retryNow() {
    if (!this.retryTimer) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.failures = 0;
    this._pump();
  }

  /** Stops sending and abandons what is queued. */
  close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    if (this.handle) this.handle.abort();
    this.abandoned += this.queue.length;
    this.queue = [];
    this._wake();
  }

  _wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  _pump() {
    if (this.closed || this.sending || this.retryTimer || this.queue.length === 0) {
      if (this.queue.length === 0) this._wake();
      return;
    }
    const item = this.queue[0];
    this.sending = item;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...this.params, ...item.params })) {
      if (v != null && v !== '') q.set(k, String(v));
    }
    let handle;
    try {
      handle = request({
        url: joinUrl(this.server, '/api/v1/profiles') + '?' + q.toString(),
        method: 'POST',
        headers: {
          Authorization: `Bearer ${this.key}`,
          'Content-Type': 'application/octet-stream',
        },
        body: item.body,
        timeoutMs: UPLOAD_TIMEOUT_MS,
        maxBody: ANSWER_MAX_BYTES,
        unref: !this.flushing,
      });
    } catch (e) {
      this.sending = null;
      return this._retry(item, e);
    }
    this.handle = handle;
    handle.promise
      .then(
        (res) => this._answer(item, res),
        (err) => this._retry(item, err),
      )
      .catch(() => {})
      .then(() => {
        this.sending = null;
        this.handle = null;
        this._pump();
      });
  }

  _remove(item) {
    const i = this.queue.indexOf(item);
    if (i >= 0) this.queue.splice(i, 1);
  }

  _answer(item, res) {
    const s = res.status;
    if (s === 200 || s === 201) {
      this._remove(item);
      this.failures = 0;
      this.stats.uploaded++;
      if (s === 200) this.stats.duplicates++;
      return;
    }
    if (s === 409) {
      this._remove(item);
      this.failures = 0;
      this.stats.conflicts++;
      try {
        if (this.hooks.onConflict) this.hooks.onConflict();
      } catch (e) {
        // never raise into the application
      }
      return;
    }
    if (s >= 400 && s < 500) {
      this._remove(item);
      this.failures = 0;
      this.stats.refused++;
      this._error(`upload refused: HTTP ${s}${detail(res.body)}`);
      return;
    }
    this._retry(item, new Error(`HTTP ${s}`));
  }

  /** Records a problem and tells hooks.onError. */
  _error(reason) {
    this.lastError = reason;
    try {
      if (this.hooks.onError) this.hooks.onError(reason);
    } catch (e) {
      // never raise into the application
    }
  }

  _retry(item, err) {
    this.stats.retries++;
    const why = `upload failed: ${(err && (err.code || err.message)) || err}`;
    if (this.closed) {
      this.lastError = why;
      return;
    }
    this._error(why);
    if (this.flushing) {
      // The server is away at exit: retrying within the 5 s would only delay the exit.
      this.closed = true;
      this._wake();
      return;
    }
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.failures);
    this.failures = Math.min(this.failures + 1, 16);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this._pump();
    }, delay * (0.5 + Math.random() / 2));
    this.retryTimer.unref();
  }
}

/** The `message` of the server's JSON error answer (`{"error", "message"}`), or null. */
function serverMessage(body) {
  if (!body || body.length === 0) return null;
  try {
    const j = JSON.parse(body.toString('utf8'));
    if (j && typeof j.message === 'string' && j.message !== '') return j.message;
  } catch (e) {
    // not JSON
  }
  return null;
}

/** The server's error message, short, for lastError. */
function detail(body) {
  const m = serverMessage(body);
  return m ? ` (${m.slice(0, 120)})` : '';
}

module.exports = { Uploader, request, joinUrl, serverMessage, QUEUE_MAX, UPLOAD_TIMEOUT_MS };
