// Config validation and clamping with the compiled limits (never overridden here), the JSON
// reader, and the status grammar.
package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

class ConfigTest {
    static final String FULL = "{\"enabled\": true, \"type\": \"wall\", \"sampling_interval_us\": 50000, "
            + "\"upload_interval_s\": 60, \"max_stack_depth\": 128, \"poll_interval_s\": 10, \"etag\": \"e1\"}";

    static Config parse(String body) throws Config.ConfigException {
        return Config.parse(body.getBytes(StandardCharsets.UTF_8), Limits.DEFAULT, null);
    }

    /** FULL with one field's JSON value replaced. */
    static String with(String field, String json) {
        return FULL.replaceFirst("\"" + field + "\": [^,}]+", "\"" + field + "\": " + json);
    }

    @Test
    void compiledBoundsAreTheDocumentedOnes() {
        Limits l = Limits.DEFAULT;
        assertEquals(20_000, l.samplingIntervalMinUs); // Java floor 20 ms (DESIGN §5)
        assertEquals(1_000_000, l.samplingIntervalMaxUs);
        assertEquals(10, l.uploadIntervalMinS);
        assertEquals(300, l.uploadIntervalMaxS);
        assertEquals(256, l.stackDepthMax);
        assertEquals(1, l.pollIntervalMinS);
        assertEquals(600, l.pollIntervalMaxS);
        assertEquals(4 * 1024 * 1024, l.uploadMaxBytes);
        assertEquals(100, l.selfCostFactor);
        assertEquals(5, l.flushTimeoutS);
        assertEquals(50_000, l.defaultSamplingIntervalUs); // the server's Java default
    }

    @Test
    void validConfig() throws Exception {
        Config c = parse(FULL);
        assertTrue(c.enabled);
        assertEquals("wall", c.type);
        assertEquals(50_000, c.samplingIntervalUs);
        assertEquals(60.0, c.uploadIntervalS);
        assertEquals(128, c.maxStackDepth);
        assertEquals(10.0, c.pollIntervalS);
        assertEquals("e1", c.etag);
    }

    @ParameterizedTest(name = "{0}={1} -> {2}")
    @CsvSource({
        "sampling_interval_us, 0, 20000",
        "sampling_interval_us, -5, 20000",
        "sampling_interval_us, 19999, 20000",
        "sampling_interval_us, 20000, 20000",
        "sampling_interval_us, 25000.4, 25000",
        "sampling_interval_us, 1e12, 1000000",
        "sampling_interval_us, 1000000000000000000000000000000, 1000000",
        "sampling_interval_us, -1e300, 20000",
        "upload_interval_s, 0, 10",
        "upload_interval_s, -1, 10",
        "upload_interval_s, 9.9, 10",
        "upload_interval_s, 30, 30",
        "upload_interval_s, 1e9, 300",
        "max_stack_depth, 0, 1",
        "max_stack_depth, -3, 1",
        "max_stack_depth, 64, 64",
        "max_stack_depth, 257, 256",
        "max_stack_depth, 1000000000, 256",
        "poll_interval_s, 0, 1",
        "poll_interval_s, 0.001, 1",
        "poll_interval_s, -10, 1",
        "poll_interval_s, 30, 30",
        "poll_interval_s, 601, 600",
        "poll_interval_s, 1e308, 600",
    })
    void outOfRangeNumbersAreClamped(String field, String value, double expected) throws Exception {
        Config c = parse(with(field, value));
        double got;
        switch (field) {
            case "sampling_interval_us": got = c.samplingIntervalUs; break;
            case "upload_interval_s": got = c.uploadIntervalS; break;
            case "max_stack_depth": got = c.maxStackDepth; break;
            default: got = c.pollIntervalS;
        }
        assertEquals(expected, got, field + "=" + value);
    }

    static Stream<Arguments> invalidBodies() {
        String[] fields = {"sampling_interval_us", "upload_interval_s", "max_stack_depth", "poll_interval_s"};
        Stream.Builder<Arguments> b = Stream.builder();
        for (String f : fields) { // every number: wrong types, NaN, Infinity, out of double range
            for (String v : new String[] {"NaN", "Infinity", "-Infinity", "1e400", "\"10000\"",
                    "\"fast\"", "null", "true", "[10000]", "{}", "0x10", "+5", ".5", "01"}) {
                b.add(Arguments.of(f + "=" + v, with(f, v)));
            }
        }
        String[] whole = {
            "{\"enabled\": \"true\"}", "{\"enabled\": 1}", "{\"enabled\": null}",
            "{\"sampling_interval_us\": 10000}", "{\"enabled\": true, \"type\": 5}",
            "{\"enabled\": true, \"type\": null}", "{\"enabled\": true, \"etag\": 7}",
            "[{\"enabled\": true}]", "null", "true", "\"enabled\"", "{\"enabled\": true",
            "{\"enabled\": true,}", "", "   ", "{\"enabled\": true} x", "{enabled: true}",
            "{\"enabled\": true, \"enabled\": false}", "{'enabled': true}",
            "{\"enabled\": true /* c */}", "{\"enabled\": tru}", "{\"enabled\": true, \"x\": \"\u0001\"}",
            "[".repeat(100000) + "]".repeat(100000),
            "{\"enabled\": true, \"pad\": \"" + "a".repeat(64 * 1024) + "\"}",
            // fuzzing: a \\u escape takes ASCII hex digits only, not '\u0664' or '\uff10'
            "{\"enabled\": true, \"etag\": \"\\u\u0660\u0660\u0664\u0661\"}",
            "{\"enabled\": true, \"x\": \"\\u00\uff10\uff10\"}",
            // an etag the server would refuse in every later poll's query (414 past ~32 KB)
            "{\"enabled\": true, \"etag\": \"" + "a".repeat(257) + "\"}",
            "{\"enabled\": true, \"etag\": \"a b\"}", "{\"enabled\": true, \"etag\": \"caf\u00e9\"}",
        };
        for (String w : whole) {
            b.add(Arguments.of("[" + (w.length() > 40 ? w.substring(0, 40) : w) + "]", w));
        }
        return b.build();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidBodies")
    void invalidConfigsAreInvalidAsAWhole(String name, String body) {
        assertThrows(Config.ConfigException.class, () -> parse(body));
    }

    @Test
    void invalidUtf8IsInvalid() {
        byte[][] bodies = {
            {(byte) 0xff, (byte) 0xfe, '{', '}'},
            "{\"enabled\": true, \"x\": \"\u00c3\"}".getBytes(StandardCharsets.ISO_8859_1),
        };
        for (byte[] body : bodies) {
            assertThrows(Config.ConfigException.class, () -> Config.parse(body, Limits.DEFAULT, null));
        }
    }

    @Test
    void unknownTypeIsARequestNotMalformed() throws Exception {
        assertEquals("heap", parse(with("type", "\"heap\"")).type);
        assertEquals("cpu", parse(with("type", "\"cpu\"")).type);
    }

    @Test
    void missingOptionalFieldsTakeJavaDefaults() throws Exception {
        Config c = parse("{\"enabled\": false}");
        assertFalse(c.enabled);
        assertEquals("wall", c.type);
        assertEquals(50_000, c.samplingIntervalUs);
        assertEquals(60.0, c.uploadIntervalS);
        assertEquals(256, c.maxStackDepth);
        assertEquals(10.0, c.pollIntervalS);
        assertNull(c.etag);
    }

    @Test
    void unknownFieldsIgnoredAndHeaderEtagUsed() throws Exception {
        byte[] b = "{\"enabled\": true, \"future\": [1, 2, {\"a\": null}]}".getBytes(StandardCharsets.UTF_8);
        assertEquals("h1", Config.parse(b, Limits.DEFAULT, "\"h1\"").etag);
        assertEquals("h2", Config.parse(b, Limits.DEFAULT, "W/\"h2\"").etag);
        byte[] withEtag = "{\"enabled\": true, \"etag\": \"b1\"}".getBytes(StandardCharsets.UTF_8);
        assertEquals("b1", Config.parse(withEtag, Limits.DEFAULT, "\"h1\"").etag);
        assertNull(Config.parse(b, Limits.DEFAULT, "\"a b\"").etag); // a malformed header is ignored
        String longTag = "f".repeat(256);
        assertEquals(longTag, parse("{\"enabled\": true, \"etag\": \"" + longTag + "\"}").etag);
    }

    @Test
    void jsonReaderValues() throws Exception {
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Json.parse(
                "{\"a\": [1, -2.5e1, 1764460860123456789, \"\\u00e9\\n\\\"\", true, null], \"b\": {}}");
        List<?> a = (List<?>) m.get("a");
        assertEquals(1L, a.get(0));
        assertEquals(-25.0, a.get(1));
        assertEquals(1764460860123456789L, a.get(2)); // int64 exact (test vectors' time_nanos)
        assertEquals("\u00e9\n\"", a.get(3));
        assertEquals(Boolean.TRUE, a.get(4));
        assertEquals(Json.NULL, a.get(5));
        assertTrue(((Map<?, ?>) m.get("b")).isEmpty());
    }

    static Stream<Arguments> statuses() {
        return Stream.of(Arguments.of("profiling", null, "profiling"),
                Arguments.of("disabled", "", "disabled"),
                Arguments.of("waiting", "no config yet", "waiting: no config yet"),
                Arguments.of("error", "caf\u00e9\nbad\u0000", "error: caf??bad?"),
                Arguments.of("bogus", "x", "error: x"),
                Arguments.of(null, null, "error"));
    }

    @ParameterizedTest(name = "{2}")
    @MethodSource("statuses")
    void statusGrammar(String state, String reason, String expected) {
        String s = StatusText.format(state, reason);
        assertTrue(java.util.regex.Pattern.matches(StatusText.GRAMMAR, s), s);
        assertEquals(expected, s);
    }

    @Test
    void statusReasonAtMost200Printable() {
        String s = StatusText.format("error", "x".repeat(500) + "\u2603");
        assertTrue(java.util.regex.Pattern.matches(StatusText.GRAMMAR, s));
        assertEquals("error: ".length() + 200, s.length());
        assertEquals("?".repeat(200), StatusText.cleanReason("\u2603".repeat(300)));
        assertEquals("?", StatusText.cleanReason("\ud83d\ude80")); // one code point, one '?'
    }
}
