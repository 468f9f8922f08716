// The encoder reproduces every wire test vector of sdk/testdata/vectors.json byte for byte.
package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;

class EncoderTest {
    static Path vectorsFile() {
        return Paths.get(System.getProperty("user.dir"), "..", "testdata", "vectors.json").normalize();
    }

    static byte[] hex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyVectorByteExact() throws Exception {
        Map<String, Object> root = (Map<String, Object>) Json.parse(Files.readAllBytes(vectorsFile()));
        List<Object> vectors = (List<Object>) root.get("vectors");
        assertTrue(vectors.size() >= 4, "vectors: " + vectors.size());
        for (Object o : vectors) {
            Map<String, Object> v = (Map<String, Object>) o;
            List<Encoder.Sample> samples = new ArrayList<>();
            for (Object so : (List<Object>) v.get("samples")) {
                Map<String, Object> s = (Map<String, Object>) so;
                List<Object> stack = (List<Object>) s.get("stack");
                samples.add(new Encoder.Sample(stack.toArray(new String[0]),
                        (Long) s.get("count"), (Long) s.get("value_ns")));
            }
            byte[] got = Encoder.encode((String) v.get("type"), (Long) v.get("time_nanos"),
                    (Long) v.get("duration_nanos"), (Long) v.get("period"), samples);
            assertArrayEquals(hex((String) v.get("pprof_hex")), got, (String) v.get("name"));
            byte[] gz = Encoder.compress(got);
            assertEquals(0x1f, gz[0] & 0xff);
            assertEquals(0x8b, gz[1] & 0xff);
            assertArrayEquals(got, new GZIPInputStream(new ByteArrayInputStream(gz)).readAllBytes());
        }
    }

    @Test
    void decodesToWhatWasEncoded() {
        List<Encoder.Sample> s = List.of(new Encoder.Sample(new String[] {"a.B.main", "a.B.run"}, 3, 150),
                new Encoder.Sample(new String[] {"a.B.main"}, 1, 50));
        PprofDecode.Profile p = PprofDecode.decode(Encoder.encode("wall", 7, 9, 50, s));
        assertEquals(List.of("samples/count", "wall/nanoseconds"), p.sampleTypes);
        assertEquals("wall/nanoseconds", p.periodType);
        assertEquals(List.of("a.B.main", "a.B.run"), p.samples.get(0).rootFirst);
        assertEquals(150, p.samples.get(0).value);
        assertEquals(7, p.timeNanos);
        assertEquals(9, p.durationNanos);
    }
}
