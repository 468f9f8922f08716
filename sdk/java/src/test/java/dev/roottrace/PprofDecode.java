// A small pprof decoder for tests: enough of profile.proto to check what the SDK sends.
package dev.roottrace;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

final class PprofDecode {
    static final class Sample {
        final List<String> rootFirst = new ArrayList<>(); // frame names, root first
        long count; // values[0]
        long value; // values[1]
    }

    static final class Profile {
        final List<String> sampleTypes = new ArrayList<>(); // "type/unit"
        final List<Sample> samples = new ArrayList<>();
        long timeNanos;
        long durationNanos;
        String periodType; // "type/unit"
        long period;

        /** Every frame name in any sample. */
        java.util.Set<String> frames() {
            java.util.Set<String> s = new java.util.HashSet<>();
            for (Sample x : samples) {
                s.addAll(x.rootFirst);
            }
            return s;
        }
    }

    private final byte[] b;
    private int pos;
    private final int end;

    private PprofDecode(byte[] b, int pos, int end) {
        this.b = b;
        this.pos = pos;
        this.end = end;
    }

    private long varint() {
        long v = 0;
        for (int shift = 0; ; shift += 7) {
            int x = b[pos++] & 0xff;
            v |= (long) (x & 0x7f) << shift;
            if (x < 0x80) {
                return v;
            }
        }
    }

    private PprofDecode sub() {
        int n = (int) varint();
        PprofDecode d = new PprofDecode(b, pos, pos + n);
        pos += n;
        return d;
    }

    private List<Long> packed() {
        PprofDecode d = sub();
        List<Long> out = new ArrayList<>();
        while (d.pos < d.end) {
            out.add(d.varint());
        }
        return out;
    }

    static Profile decode(byte[] raw) {
        PprofDecode d = new PprofDecode(raw, 0, raw.length);
        List<long[]> types = new ArrayList<>();
        List<List<Long>[]> samples = new ArrayList<>();
        Map<Long, Long> locFn = new HashMap<>();
        Map<Long, Long> fnName = new HashMap<>();
        List<String> strings = new ArrayList<>();
        long[] periodType = new long[2];
        Profile p = new Profile();
        while (d.pos < d.end) {
            long tag = d.varint();
            int field = (int) (tag >>> 3);
            switch (field) {
                case 1: types.add(d.sub().pair()); break;
                case 2: {
                    PprofDecode s = d.sub();
                    @SuppressWarnings("unchecked")
                    List<Long>[] sv = new List[] {new ArrayList<Long>(), new ArrayList<Long>()};
                    while (s.pos < s.end) {
                        int f = (int) (s.varint() >>> 3);
                        sv[f - 1].addAll(s.packed());
                    }
                    samples.add(sv);
                    break;
                }
                case 4: {
                    PprofDecode l = d.sub();
                    long id = 0;
                    long fn = 0;
                    while (l.pos < l.end) {
                        int f = (int) (l.varint() >>> 3);
                        if (f == 1) {
                            id = l.varint();
                        } else {
                            PprofDecode line = l.sub();
                            line.varint();
                            fn = line.varint();
                        }
                    }
                    locFn.put(id, fn);
                    break;
                }
                case 5: {
                    long[] fp = d.sub().pair();
                    fnName.put(fp[0], fp[1]);
                    break;
                }
                case 6: {
                    int n = (int) d.varint();
                    strings.add(new String(raw, d.pos, n, StandardCharsets.UTF_8));
                    d.pos += n;
                    break;
                }
                case 9: p.timeNanos = d.varint(); break;
                case 10: p.durationNanos = d.varint(); break;
                case 11: periodType = d.sub().pair(); break;
                case 12: p.period = d.varint(); break;
                default: throw new IllegalArgumentException("unexpected field " + field);
            }
        }
        for (long[] t : types) {
            p.sampleTypes.add(strings.get((int) t[0]) + "/" + strings.get((int) t[1]));
        }
        p.periodType = strings.get((int) periodType[0]) + "/" + strings.get((int) periodType[1]);
        for (List<Long>[] sv : samples) {
            Sample s = new Sample();
            for (int i = sv[0].size() - 1; i >= 0; i--) {
                s.rootFirst.add(strings.get((int) (long) fnName.get(locFn.get(sv[0].get(i)))));
            }
            s.count = sv[1].get(0);
            s.value = sv[1].get(1);
            p.samples.add(s);
        }
        return p;
    }

    /** Fields 1 and 2 of a small message (ValueType, Function id/name). */
    private long[] pair() {
        long[] v = new long[2];
        while (pos < end) {
            int f = (int) (varint() >>> 3);
            v[f - 1] = varint();
        }
        return v;
    }
}
