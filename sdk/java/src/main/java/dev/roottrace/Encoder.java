// Encoder: the canonical pprof encoding of sdk/testdata/README.md (a small protobuf writer
// of our own, no dependencies), and gzip for upload.
package dev.roottrace;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPOutputStream;

final class Encoder {
    /** A sample as the encoder takes it: frames root first, sample count, value in ns. */
    static final class Sample {
        final String[] rootFirst; // frame names, root first
        final long count; // samples/count
        final long valueNs; // wall (or cpu) nanoseconds

        Sample(String[] rootFirst, long count, long valueNs) {
            this.rootFirst = rootFirst;
            this.count = count;
            this.valueNs = valueNs;
        }
    }

    /** A growable byte buffer with protobuf writers. */
    private static final class Buf extends ByteArrayOutputStream {
        Buf() {
            super(64);
        }

        void varint(long v) {
            while ((v & ~0x7FL) != 0) { // unsigned: negatives take 10 bytes, as protobuf
                write((int) ((v & 0x7F) | 0x80));
                v >>>= 7;
            }
            write((int) v);
        }

        /** A varint field, omitted when 0 (proto3). */
        void num(int field, long v) {
            if (v != 0) {
                varint((long) field << 3);
                varint(v);
            }
        }

        /** A length-delimited field. */
        void ld(int field, byte[] payload) {
            varint((long) field << 3 | 2);
            varint(payload.length);
            write(payload, 0, payload.length);
        }

        void ld(int field, Buf payload) {
            varint((long) field << 3 | 2);
            varint(payload.size());
            write(payload.buf, 0, payload.size());
        }
    }

    private Encoder() {
    }

    private static Buf pair(long a, long b) {
        Buf p = new Buf();
        p.num(1, a);
        p.num(2, b);
        return p;
    }

    /**
     * The uncompressed pprof bytes of a profile: {@code type} ("wall" or "cpu") in
     * nanoseconds, {@code periodNs} in ns, samples in the order given, each stack root first.
     * Location and function ids are 1, 2, ... in order of first appearance walking the samples
     * in order, each stack leaf first; a location and its function share the id.
     */
    static byte[] encode(String type, long timeNanos, long durationNanos, long periodNs,
            List<Sample> samples) {
        List<String> strings = new ArrayList<>();
        Map<String, Integer> index = new HashMap<>();
        for (String x : new String[] {"", "samples", "count", type, "nanoseconds"}) {
            intern(x, strings, index);
        }
        Map<String, Integer> frameId = new HashMap<>();
        List<String> frames = new ArrayList<>();
        Buf out = new Buf();
        out.ld(1, pair(intern("samples", strings, index), intern("count", strings, index)));
        Buf valueType = pair(intern(type, strings, index), intern("nanoseconds", strings, index));
        out.ld(1, valueType);
        for (Sample smp : samples) {
            Buf ids = new Buf();
            for (int i = smp.rootFirst.length - 1; i >= 0; i--) {
                String f = smp.rootFirst[i];
                Integer id = frameId.get(f);
                if (id == null) {
                    frames.add(f);
                    id = frames.size();
                    frameId.put(f, id);
                }
                ids.varint(id);
            }
            Buf values = new Buf();
            values.varint(smp.count);
            values.varint(smp.valueNs);
            Buf body = new Buf();
            if (ids.size() > 0) {
                body.ld(1, ids);
            }
            body.ld(2, values);
            out.ld(2, body);
        }
        for (int i = 1; i <= frames.size(); i++) {
            Buf line = new Buf();
            line.num(1, i);
            Buf loc = new Buf();
            loc.num(1, i);
            loc.ld(4, line);
            out.ld(4, loc);
        }
        for (int i = 1; i <= frames.size(); i++) {
            Buf fn = new Buf();
            fn.num(1, i);
            fn.num(2, intern(frames.get(i - 1), strings, index));
            out.ld(5, fn);
        }
        for (String x : strings) {
            out.ld(6, x.getBytes(StandardCharsets.UTF_8));
        }
        out.num(9, timeNanos);
        out.num(10, durationNanos);
        out.ld(11, valueType);
        out.num(12, periodNs);
        return out.toByteArray();
    }

    private static int intern(String x, List<String> strings, Map<String, Integer> index) {
        Integer i = index.get(x);
        if (i == null) {
            i = strings.size();
            index.put(x, i);
            strings.add(x);
        }
        return i;
    }

    /** gzip of the encoded profile (the header's mtime is 0, so equal input, equal bytes). */
    static byte[] compress(byte[] raw) {
        ByteArrayOutputStream bo = new ByteArrayOutputStream(raw.length / 4 + 64);
        try (GZIPOutputStream gz = new GZIPOutputStream(bo)) {
            gz.write(raw);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        return bo.toByteArray();
    }
}
