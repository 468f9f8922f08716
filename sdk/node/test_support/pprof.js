'use strict';
// A minimal pprof decoder for the tests, written independently of lib/encoder.js: reads any
// field order, packed or unpacked repeated fields, and returns root-first stacks.

function reader(buf) {
  let pos = 0;
  const r = {
    eof: () => pos >= buf.length,
    varint() {
      let x = 0n;
      let shift = 0n;
      for (;;) {
        if (pos >= buf.length) throw new Error('truncated varint');
        const b = buf[pos++];
        x |= BigInt(b & 0x7f) << shift;
        if (!(b & 0x80)) return x;
        shift += 7n;
      }
    },
    bytes() {
      const n = Number(r.varint());
      if (pos + n > buf.length) throw new Error('truncated field');
      const out = buf.subarray(pos, pos + n);
      pos += n;
      return out;
    },
    skip(wire) {
      if (wire === 0) r.varint();
      else if (wire === 2) r.bytes();
      else if (wire === 1) pos += 8;
      else if (wire === 5) pos += 4;
      else throw new Error(`wire type ${wire}`);
    },
  };
  return r;
}

/** Calls fn(field, wire, r) for each field of message buf. */
function fields(buf, fn) {
  const r = reader(buf);
  while (!r.eof()) {
    const key = Number(r.varint());
    fn(key >>> 3, key & 7, r);
  }
}

/** Repeated varints, packed (wire 2) or not (wire 0), appended to out. */
function repeated(wire, r, out) {
  if (wire === 2) {
    const sub = reader(r.bytes());
    while (!sub.eof()) out.push(sub.varint());
  } else {
    out.push(r.varint());
  }
}

/**
 * Decodes an uncompressed pprof. Returns {sampleType: [[type, unit]], periodType, period,
 * timeNanos, durationNanos (BigInts), strings, samples: [{stack (names, root first),
 * values (BigInts)}]}.
 */
function decodeProfile(buf) {
  const p = { sampleTypeIdx: [], samples: [], locations: new Map(), functions: new Map(), strings: [] };
  p.timeNanos = 0n;
  p.durationNanos = 0n;
  p.period = 0n;
  let periodTypeIdx = null;
  const valueType = (b) => {
    const vt = [0n, 0n];
    fields(b, (f, w, r) => (f === 1 || f === 2 ? (vt[f - 1] = r.varint()) : r.skip(w)));
    return vt;
  };
  fields(buf, (f, w, r) => {
    switch (f) {
      case 1:
        p.sampleTypeIdx.push(valueType(r.bytes()));
        break;
      case 2: {
        const s = { loc: [], values: [] };
        fields(r.bytes(), (sf, sw, sr) => {
          if (sf === 1) repeated(sw, sr, s.loc);
          else if (sf === 2) repeated(sw, sr, s.values);
          else sr.skip(sw);
        });
        p.samples.push(s);
        break;
      }
      case 4: {
        const loc = { id: 0n, fns: [] };
        fields(r.bytes(), (lf, lw, lr) => {
          if (lf === 1) loc.id = lr.varint();
          else if (lf === 4) {
            fields(lr.bytes(), (nf, nw, nr) => (nf === 1 ? loc.fns.push(nr.varint()) : nr.skip(nw)));
          } else lr.skip(lw);
        });
        p.locations.set(loc.id, loc);
        break;
      }
      case 5: {
        const fn = { id: 0n, name: 0n };
        fields(r.bytes(), (ff, fw, fr) => {
          if (ff === 1) fn.id = fr.varint();
          else if (ff === 2) fn.name = fr.varint();
          else fr.skip(fw);
        });
        p.functions.set(fn.id, fn);
        break;
      }
      case 6:
        p.strings.push(Buffer.from(r.bytes()).toString('utf8'));
        break;
      case 9:
        p.timeNanos = r.varint();
        break;
      case 10:
        p.durationNanos = r.varint();
        break;
      case 11:
        periodTypeIdx = valueType(r.bytes());
        break;
      case 12:
        p.period = r.varint();
        break;
      default:
        r.skip(w);
    }
  });
  const str = (i) => p.strings[Number(i)];
  const name = (locId) => {
    const loc = p.locations.get(locId);
    return str(p.functions.get(loc.fns[0]).name);
  };
  return {
    sampleType: p.sampleTypeIdx.map(([t, u]) => [str(t), str(u)]),
    periodType: periodTypeIdx && [str(periodTypeIdx[0]), str(periodTypeIdx[1])],
    period: p.period,
    timeNanos: p.timeNanos,
    durationNanos: p.durationNanos,
    strings: p.strings,
    samples: p.samples.map((s) => ({ stack: s.loc.map(name).reverse(), values: s.values })),
  };
}

module.exports = { decodeProfile };
