'use strict';
// A fake RootTrace server for the SDK tests: an honest control plane (etag, held polls,
// 304) that a test can turn hostile, and an upload endpoint that records what it gets.

const http = require('node:http');
const zlib = require('node:zlib');
const inspector = require('node:inspector');
const { decodeProfile } = require('./pprof');

const KEY = 'test-ingest-key';

/**
 * Starts the fake on 127.0.0.1 (random port). Returns cp with:
 *   url, config (set cp.setConfig(obj) to change it; etag follows), polls ([{at, query}]),
 *   uploads ([{at, query, profile}]), uploadStatus (201), hostile (null or a function
 *   (req, res) that answers the poll instead), lastHonestAt (when the last valid config
 *   answer, 200 or 304, was sent), close().
 */
async function startFake(initial) {
  const cp = {
    polls: [],
    uploads: [],
    uploadStatus: 201,
    hostile: null,
    config: null,
    etag: null,
    gen: 0,
    waiters: new Set(),
    sockets: new Set(),
  };
  cp.setConfig = (obj) => {
    cp.gen++;
    cp.config = obj;
    cp.etag = `e${cp.gen}`;
    for (const w of cp.waiters) w();
  };
  cp.setConfig(initial || defaultConfig());

  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const query = Object.fromEntries(u.searchParams);
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end('{"error":"unauthorized","message":"bad key"}');
    }
    if (u.pathname === '/api/v1/sdk/config' && req.method === 'GET') {
      cp.polls.push({ at: performance.now(), query });
      if (cp.hostile) return cp.hostile(req, res, query);
      return honestPoll(cp, req, res, query);
    }
    if (u.pathname === '/api/v1/profiles' && req.method === 'POST') {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        let profile = null;
        try {
          profile = decodeProfile(zlib.gunzipSync(Buffer.concat(chunks)));
        } catch (e) {
          profile = { error: String(e) };
        }
        cp.uploads.push({
          at: performance.now(),
          query,
          headers: req.headers,
          status: cp.uploadStatus,
          profile,
        });
        res.writeHead(cp.uploadStatus, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: String(cp.uploads.length), service: query.service, type: 'cpu' }));
      });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  server.on('connection', (s) => {
    cp.sockets.add(s);
    s.on('close', () => cp.sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  cp.url = `http://127.0.0.1:${server.address().port}`;
  cp.close = () =>
    new Promise((r) => {
      cp.hostile = null;
      for (const w of cp.waiters) w();
      for (const s of cp.sockets) s.destroy();
      server.close(() => r());
    });
  return cp;
}

/** The server's answer to a poll: 200 at once on a different etag, else hold, then 304. */
function honestPoll(cp, req, res, query) {
  const send200 = () => {
    const body = JSON.stringify({ ...cp.config, etag: cp.etag });
    cp.lastHonestAt = performance.now();
    res.writeHead(200, { 'content-type': 'application/json', etag: `"${cp.etag}"` });
    res.end(body);
  };
  if (!query.etag || query.etag !== cp.etag) return send200();
  const waitS = Math.max(0, Math.min(30, Number(query.wait) || 0));
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    cp.waiters.delete(onChange);
    if (res.destroyed) return;
    if (query.etag !== cp.etag) return send200();
    cp.lastHonestAt = performance.now();
    res.writeHead(304);
    res.end();
  };
  const onChange = () => finish();
  const timer = setTimeout(finish, waitS * 1000);
  cp.waiters.add(onChange);
  req.on('close', () => {
    if (!done) {
      done = true;
      clearTimeout(timer);
      cp.waiters.delete(onChange);
    }
  });
}

function defaultConfig(over) {
  return {
    enabled: true,
    type: 'cpu',
    sampling_interval_us: 10000,
    upload_interval_s: 60,
    max_stack_depth: 256,
    poll_interval_s: 1,
    ...over,
  };
}

/**
 * A session factory wrapping real inspector Sessions, recording what the SDK asks of V8:
 * spy.intervals (setSamplingInterval arguments), spy.active (profiles running now),
 * spy.starts, spy.stops.
 */
function spySessions() {
  const spy = { intervals: [], active: 0, starts: 0, stops: 0 };
  spy.create = () => {
    const s = new inspector.Session();
    const post = s.post.bind(s);
    s.post = (method, params, cb) => {
      if (method === 'Profiler.setSamplingInterval') spy.intervals.push(params.interval);
      if (method === 'Profiler.start') {
        spy.active++;
        spy.starts++;
      }
      if (method === 'Profiler.stop') {
        spy.active--;
        spy.stops++;
      }
      return post(method, params, cb);
    };
    return s;
  };
  return spy;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until pred() is true (checked every 25 ms) or ms pass; returns pred()'s last value. */
async function until(pred, ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (pred()) return true;
    await sleep(25);
  }
  return pred();
}

/** Burns CPU in a named function for ms, in slices that let timers run between them. */
async function burnNamed(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const slice = Date.now() + 50;
    let x = 0;
    while (Date.now() < slice) for (let i = 0; i < 10000; i++) x += Math.sqrt(i + x);
    await sleep(1);
  }
}

module.exports = { startFake, defaultConfig, spySessions, sleep, until, burnNamed, KEY };
