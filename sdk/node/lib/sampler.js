'use strict';
// CPU profiles of the main JS thread from V8's sampling profiler over node:inspector, frame
// names (DESIGN §3), and the reduction of a V8 Profile to weighted stacks (DESIGN §2).

const fs = require('node:fs');
const path = require('node:path');
const { fileURLToPath } = require('node:url');

// Nodes V8 adds when no JS frame could be symbolised; they keep their own names (DESIGN §3).
const SPECIAL = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);
// Linux's USER_HZ: the unit of utime/stime in /proc/<pid>/task/<tid>/stat. It has been 100
// on every Linux ABI Node runs on; Node offers no sysconf() to read it.
const CLK_TCK = 100;
// A healthy profiler yields a sample per interval even when idle (`(idle)`): a profile this
// long with none at all comes from a stuck profiler thread (DataDog/pprof-nodejs#125).
const STUCK_AFTER_US = 1000000;

/**
 * The application root (DESIGN §3): the nearest directory holding a package.json at or
 * above the main script's directory; else the main script's directory; else the working
 * directory. Symlinks are resolved, as Node resolves them in script URLs.
 */
function findAppRoot(mainFile) {
  const real = (p) => {
    try {
      return fs.realpathSync(p);
    } catch (e) {
      return path.resolve(p);
    }
  };
  if (!mainFile) return real(process.cwd());
  const start = path.dirname(real(path.resolve(mainFile)));
  for (let dir = start; ; ) {
    try {
      if (fs.statSync(path.join(dir, 'package.json')).isFile()) return dir;
    } catch (e) {
      // not here
    }
    const up = path.dirname(dir);
    if (up === dir) return start;
    dir = up;
  }
}

/** The main script's path, as given to node (CommonJS or ES module), or null (REPL, -e). */
function mainScript() {
  if (require.main && require.main.filename) return require.main.filename;
  const arg = process.argv[1];
  return arg ? path.resolve(arg) : null;
}

/** p without its extension (`src/pricing.js` -> `src/pricing`); dotfiles keep their name. */
function dropExtension(p) {
  const base = p.slice(p.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? p.slice(0, p.length - (base.length - dot)) : p;
}

/**
 * The module part of a frame (DESIGN §3) for a script URL: path relative to root without its
 * extension; from the package name on inside node_modules; `node:` built-ins as is; an
 * absolute path outside root. Scripts without a URL: `(native)` for V8 builtins and
 * bindings (scriptId "0"), `(eval)` for eval/new Function code. Other URLs (wasm://, a vm
 * script's own name) are kept as given.
 */
function moduleOf(url, scriptId, root) {
  if (!url) return scriptId === '0' || scriptId === 0 || scriptId == null ? '(native)' : '(eval)';
  if (url.startsWith('node:')) return url;
  let file = null;
  if (url.startsWith('file:')) {
    try {
      file = fileURLToPath(url);
    } catch (e) {
      return url;
    }
  } else if (path.isAbsolute(url)) {
    file = url;
  } else {
    return url;
  }
  file = file.split(path.sep).join('/');
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0 && nm + 14 < file.length) return dropExtension(file.slice(nm + 14));
  const rel = path.relative(root, file.split('/').join(path.sep)).split(path.sep).join('/');
  if (rel && !rel.startsWith('../') && rel !== '..' && !path.isAbsolute(rel)) return dropExtension(rel);
  return dropExtension(file);
}

/** Returns a function naming a V8 callFrame `module.function` (cached per script/function). */
function frameNamer(root) {
  const cache = new Map();
  return (cf) => {
    const fn = cf.functionName || '';
    const url = cf.url || '';
    if (!url && SPECIAL.has(fn)) return fn;
    const key = `${url}\u0000${url ? '' : cf.scriptId === '0' ? 'n' : 'e'}\u0000${fn}`;
    let name = cache.get(key);
    if (name === undefined) {
      name = `${moduleOf(url, cf.scriptId, root)}.${fn || '(anonymous)'}`;
      cache.set(key, name);
    }
    return name;
  };
}

/**
 * Reduces a V8 Profile to weighted stacks (DESIGN §2): each sample weighs its timeDeltas
 * entry (the gap before it, µs; negatives count 0), `(idle)` samples are left out, and
 * stacks keep their leaf-most maxDepth frames. Returns {samples: [{stack (root first), count,
 * value_ns}] in order of first appearance, total, idle, negative (deltas clamped), median
 * delta (µs)}.
 */
function aggregate(profile, { nameOf, maxDepth }) {
  const nodes = new Map();
  const parent = new Map();
  for (const n of profile.nodes || []) {
    nodes.set(n.id, n);
    for (const c of n.children || []) parent.set(c, n.id);
  }
  const ids = profile.samples || [];
  const deltas = profile.timeDeltas || [];
  const perNode = new Map(); // leaf node id -> [count, µs]
  let idle = 0;
  let negative = 0;
  for (let i = 0; i < ids.length; i++) {
    const node = nodes.get(ids[i]);
    if (!node) continue;
    const cf = node.callFrame || {};
    if (cf.functionName === '(idle)' && !cf.url) {
      idle++;
      continue;
    }
    let d = Number(deltas[i]);
    if (!Number.isFinite(d)) d = 0;
    if (d < 0) {
      negative++;
      d = 0;
    }
    let acc = perNode.get(node.id);
    if (!acc) perNode.set(node.id, (acc = [0, 0]));
    acc[0]++;
    acc[1] += d;
  }
  const byStack = new Map();
  const samples = [];
  for (const [id, [count, us]] of perNode) {
    const leafFirst = [];
    for (let cur = id; cur !== undefined && leafFirst.length < maxDepth; cur = parent.get(cur)) {
      const n = nodes.get(cur);
      if (!n) break;
      const cf = n.callFrame || {};
      if (cf.functionName === '(root)' && !cf.url && !parent.has(cur)) break;
      leafFirst.push(nameOf(cf));
    }
    if (leafFirst.length === 0) continue; // a sample on (root) itself: nothing to name
    const key = leafFirst.join('\u0000');
    let s = byStack.get(key);
    if (!s) {
      s = { stack: leafFirst.reverse(), count: 0, value_ns: 0 };
      byStack.set(key, s);
      samples.push(s);
    }
    s.count += count;
    s.value_ns += us * 1000;
  }
  const sorted = Array.from(deltas, Number).filter(Number.isFinite).sort((a, b) => a - b);
  return {
    samples,
    total: ids.length,
    idle,
    negative,
    medianDeltaUs: sorted.length ? sorted[sorted.length >> 1] : null,
  };
}

/** The main thread's CPU time (utime + stime), ns, from /proc; null where unavailable. */
function threadCpuNs() {
  try {
    const s = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'latin1');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 (state); utime and stime are fields 14 and 15.
    const ticks = Number(f[11]) + Number(f[12]);
    return Number.isFinite(ticks) ? Math.round((ticks * 1e9) / CLK_TCK) : null;
  } catch (e) {
    return null;
  }
}

/** The process's CPU time (user + system, all threads), ns. */
function processCpuNs() {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

/** Why V8's profiler cannot be ours, or null: --cpu-prof already drives it. */
function profilerHeldByFlag() {
  const opts = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS || ''}`;
  return /(^|\s)--cpu-prof(\s|=|$)/.test(opts) ? '--cpu-prof' : null;
}

/** The error the sampler throws when the profiler is someone else's. */
class DeclinedError extends Error {}

/**
 * Drives V8's CPU profiler, one inspector Session per profile: begin() creates and starts
 * one, end() stops it and disposes of it, which disposes of V8's CpuProfiler (google/
 * pprof-nodejs#142: a long-lived profiler leaks). Calls must not overlap (the caller
 * serialises them).
 */
class Sampler {
  constructor({ createSession }) {
    this.createSession = createSession; // () => an inspector.Session (connected by begin)
    this.session = null;
    this.intervalUs = 0; // interval of the profile running
    this.startThreadCpu = null;
    this.startProcessCpu = 0;
  }

  get running() {
    return this.session !== null;
  }

  _post(session, method, params) {
    return new Promise((resolve, reject) => {
      try {
        session.post(method, params || {}, (err, res) => (err ? reject(err) : resolve(res)));
      } catch (e) {
        reject(e);
      }
    });
  }

  /** Starts a profile at intervalUs. Throws DeclinedError when V8's profiler is not ours. */
  async begin(intervalUs) {
    const held = profilerHeldByFlag();
    if (held) throw new DeclinedError(`V8 profiler in use (${held})`);
    let session;
    try {
      session = this.createSession();
      session.connect();
      await this._post(session, 'Profiler.enable');
      await this._post(session, 'Profiler.setSamplingInterval', { interval: intervalUs });
      this.startThreadCpu = threadCpuNs();
      this.startProcessCpu = processCpuNs();
      await this._post(session, 'Profiler.start');
    } catch (e) {
      if (session) this._dispose(session);
      throw new DeclinedError(`V8 profiler in use (${(e && e.message) || e})`);
    }
    this.session = session;
    this.intervalUs = intervalUs;
  }

  /**
   * Stops the profile and disposes of its session. Resolves to {profile, intervalUs,
   * timeNanos (BigInt, Unix epoch), durationNanos, threadCpuNs (or null), processCpuNs,
   * stuck}, or null when no profile was running or V8 returned none.
   */
  async end() {
    const session = this.session;
    if (!session) return null;
    this.session = null;
    let profile = null;
    try {
      profile = (await this._post(session, 'Profiler.stop')).profile;
    } catch (e) {
      profile = null;
    }
    const thread = threadCpuNs();
    const proc = processCpuNs();
    const monoUs = Number(process.hrtime.bigint() / 1000n);
    const epochUs = Date.now() * 1000;
    this._dispose(session);
    if (!profile || typeof profile.startTime !== 'number') return null;
    const durationUs = Math.max(0, profile.endTime - profile.startTime);
    return {
      profile,
      intervalUs: this.intervalUs,
      timeNanos: BigInt(Math.round(epochUs - (monoUs - profile.startTime))) * 1000n,
      durationNanos: Math.round(durationUs * 1000),
      threadCpuNs:
        thread != null && this.startThreadCpu != null ? Math.max(0, thread - this.startThreadCpu) : null,
      processCpuNs: Math.max(0, proc - this.startProcessCpu),
      stuck: (profile.samples || []).length === 0 && durationUs >= STUCK_AFTER_US,
    };
  }

  _dispose(session) {
    this._post(session, 'Profiler.disable').catch(() => {});
    try {
      session.disconnect();
    } catch (e) {
      // already gone
    }
  }
}

module.exports = {
  Sampler,
  DeclinedError,
  aggregate,
  frameNamer,
  moduleOf,
  findAppRoot,
  mainScript,
  threadCpuNs,
  processCpuNs,
  profilerHeldByFlag,
  CLK_TCK,
};
