'use strict';
// The canonical pprof encoding every RootTrace SDK writes (sdk/testdata/README.md), and gzip.

const zlib = require('node:zlib');

/** A growable byte buffer with protobuf primitives. */
class Writer {
  constructor(size = 256) {
    this.buf = Buffer.allocUnsafe(size);
    this.len = 0;
  }

  _room(n) {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /** An unsigned varint; x is a non-negative safe integer or a BigInt (int64 as two's complement). */
  varint(x) {
    this._room(10);
    if (typeof x === 'number' && x >= 0 && x <= 0x7fffffff) {
      while (x > 0x7f) {
        this.buf[this.len++] = (x & 0x7f) | 0x80;
        x >>>= 7;
      }
      this.buf[this.len++] = x;
      return;
    }
    let b = BigInt.asUintN(64, BigInt(x));
    while (b > 0x7fn) {
      this.buf[this.len++] = Number(b & 0x7fn) | 0x80;
      b >>= 7n;
    }
    this.buf[this.len++] = Number(b);
  }

  bytes(b) {
    this._room(b.length);
    if (Buffer.isBuffer(b)) b.copy(this.buf, this.len);
    else this.buf.set(b, this.len);
    this.len += b.length;
  }

  /** Field header: (field << 3) | wire type. */
  tag(field, wire) {
    this.varint(field * 8 + wire);
  }

  /** A varint field, omitted when 0 (proto3). */
  int(field, x) {
    if (x === 0 || x === 0n) return;
    this.tag(field, 0);
    this.varint(x);
  }

  /** A length-delimited field holding b (Buffer, Uint8Array or Writer). */
  lenDelim(field, b) {
    const data = b instanceof Writer ? b.buf.subarray(0, b.len) : b;
    this.tag(field, 2);
    this.varint(data.length);
    this.bytes(data);
  }

  /** A packed repeated varint field, omitted when empty. */
  packed(field, xs) {
    if (xs.length === 0) return;
    const w = new Writer(xs.length * 2 + 8);
    for (const x of xs) w.varint(x);
    this.lenDelim(field, w);
  }

  finish() {
    return this.buf.subarray(0, this.len);
  }
}

/** A ValueType {type, unit} message from string indices. */
function valueType(type, unit) {
  const w = new Writer(8);
  w.int(1, type);
  w.int(2, unit);
  return w;
}

/**
 * Encodes a profile as uncompressed pprof bytes, canonically (sdk/testdata/README.md):
 * p = {type: 'cpu'|'wall', time_nanos, duration_nanos, period (numbers or BigInts, ns),
 * samples: [{stack: [frame names, root first], count, value_ns}]}. Returns a Buffer.
 */
function encodeProfile(p) {
  const strings = ['', 'samples', 'count', p.type, 'nanoseconds'];
  const stringIndex = new Map();
  strings.forEach((s, i) => {
    if (!stringIndex.has(s)) stringIndex.set(s, i);
  });
  const intern = (s) => {
    let i = stringIndex.get(s);
    if (i === undefined) {
      i = strings.length;
      strings.push(s);
      stringIndex.set(s, i);
    }
    return i;
  };
  const typeIndex = stringIndex.get(p.type);
  const ids = new Map(); // frame name -> location/function id
  const names = []; // id - 1 -> name
  const out = new Writer(1024);

  out.lenDelim(1, valueType(1, 2));
  out.lenDelim(1, valueType(typeIndex, 4));

  for (const s of p.samples) {
    const locs = [];
    for (let i = s.stack.length - 1; i >= 0; i--) {
      const name = s.stack[i];
      let id = ids.get(name);
      if (id === undefined) {
        id = names.length + 1;
        ids.set(name, id);
        names.push(name);
      }
      locs.push(id);
    }
    const w = new Writer(locs.length * 2 + 16);
    w.packed(1, locs);
    w.packed(2, [s.count, s.value_ns]);
    out.lenDelim(2, w);
  }

  for (let id = 1; id <= names.length; id++) {
    const line = new Writer(8);
    line.int(1, id);
    const loc = new Writer(16);
    loc.int(1, id);
    loc.lenDelim(4, line);
    out.lenDelim(4, loc);
  }
  const nameIndex = names.map(intern);
  for (let id = 1; id <= names.length; id++) {
    const fn = new Writer(16);
    fn.int(1, id);
    fn.int(2, nameIndex[id - 1]);
    out.lenDelim(5, fn);
  }

  for (const s of strings) out.lenDelim(6, Buffer.from(s, 'utf8'));

  out.int(9, p.time_nanos);
  out.int(10, p.duration_nanos);
  out.lenDelim(11, valueType(typeIndex, 4));
  out.int(12, p.period);
  return out.finish();
}

/** gzip of buf, off the main thread (zlib's thread pool). Resolves to a Buffer. */
function gzip(buf) {
  return new Promise((resolve, reject) =>
    zlib.gzip(buf, (err, out) => (err ? reject(err) : resolve(out))),
  );
}

/** The sum of `count` over samples ([{count}]). */
function countOf(samples) {
  let n = 0;
  for (const s of samples) n += s.count;
  return n;
}

/**
 * Encodes and gzips p, keeping the body within maxBytes: when it is larger, the lightest
 * samples are left out (halving their number each try) until it fits. Resolves to
 * {body, samplesKept, samplesTotal, countKept}: body is null if even one sample does not
 * fit; samplesKept and samplesTotal count p.samples entries (stacks), countKept sums the
 * `count` of those kept (V8 samples).
 */
async function encodeWithin(p, maxBytes) {
  let samples = p.samples;
  let body = await gzip(encodeProfile(p));
  if (body.length <= maxBytes) {
    const n = samples.length;
    return { body, samplesKept: n, samplesTotal: n, countKept: countOf(samples) };
  }
  const byWeight = samples
    .map((s, i) => [s, i])
    .sort((a, b) => b[0].value_ns - a[0].value_ns || a[1] - b[1]);
  let keep = samples.length;
  while (keep > 1) {
    keep = Math.floor(keep / 2);
    const kept = byWeight.slice(0, keep).sort((a, b) => a[1] - b[1]).map((x) => x[0]);
    body = await gzip(encodeProfile({ ...p, samples: kept }));
    if (body.length <= maxBytes) {
      return { body, samplesKept: keep, samplesTotal: samples.length, countKept: countOf(kept) };
    }
  }
  return { body: null, samplesKept: 0, samplesTotal: samples.length, countKept: 0 };
}

module.exports = { encodeProfile, encodeWithin, gzip, Writer };
