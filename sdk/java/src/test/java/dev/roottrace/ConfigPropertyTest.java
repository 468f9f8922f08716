// Property test of Config.parse (DESIGN §5) on seeded hostile bodies: mutations of a valid
// config (wrong types, huge numbers, NaN-ish tokens, bad \\u escapes, deep nesting, long and
// unicode strings, duplicate keys, truncated or corrupted bytes). For every body parse
// throws ConfigException (profiling off) and nothing else, or returns a config whose every
// bound lies within the compiled clamps; the same body gives the same answer; a generated
// body with a known outcome gets exactly it (Json is the SDK's own reader, so the generator
// is the oracle: it knows which bodies are strict JSON). Saved inputs in
// sdk/testdata/config_fuzz/ are replayed. ROOTTRACE_CONFIG_FUZZ_SECONDS=N runs for N
// seconds from a random seed instead (scripts/fuzz-sdk.sh), saving a failing body there.
package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class ConfigPropertyTest {
    static final int CASES = 4000; // a second or two here
    static final Path CRASHES = Paths.get("../testdata/config_fuzz"); // shared by the five SDKs
    static final String[] NUMERIC = {"sampling_interval_us", "upload_interval_s", "max_stack_depth",
        "poll_interval_s"};
    static final double[][] BOUNDS = { // lo, hi, default (Limits)
        {Limits.SAMPLING_INTERVAL_MIN_US, Limits.SAMPLING_INTERVAL_MAX_US, Limits.DEFAULT_SAMPLING_INTERVAL_US},
        {Limits.UPLOAD_INTERVAL_MIN_S, Limits.UPLOAD_INTERVAL_MAX_S, Limits.DEFAULT_UPLOAD_INTERVAL_S},
        {Limits.STACK_DEPTH_MIN, Limits.STACK_DEPTH_MAX, Limits.STACK_DEPTH_MAX},
        {Limits.POLL_INTERVAL_MIN_S, Limits.POLL_INTERVAL_MAX_S, Limits.DEFAULT_POLL_INTERVAL_S}};

    /** A token written as is: kind "nonjson" (invalid anywhere), "overflow" (beyond a double:
     *  refused by Json anywhere) or "deep" (nesting that may pass Json's 64 levels). */
    static final class Raw {
        final String text;
        final String kind;

        Raw(String text, String kind) {
            this.text = text;
            this.kind = kind;
        }
    }

    /** An object as key/value pairs (keys may repeat). */
    static final class Obj {
        final List<Object[]> pairs;

        Obj(List<Object[]> pairs) {
            this.pairs = pairs;
        }
    }

    static final Object NULL = Json.NULL;
    final Random r = new Random();

    <T> T pick(List<T> xs) {
        return xs.get(r.nextInt(xs.size()));
    }

    static String dump(Object v) {
        if (v instanceof Raw) {
            return ((Raw) v).text;
        }
        if (v instanceof Obj) {
            StringBuilder b = new StringBuilder("{");
            for (Object[] p : ((Obj) v).pairs) {
                b.append(b.length() > 1 ? ", " : "").append(dump(p[0])).append(": ").append(dump(p[1]));
            }
            return b.append('}').toString();
        }
        if (v instanceof List) {
            StringBuilder b = new StringBuilder("[");
            for (Object x : (List<?>) v) {
                b.append(b.length() > 1 ? "," : "").append(dump(x));
            }
            return b.append(']').toString();
        }
        if (v instanceof String) {
            StringBuilder b = new StringBuilder("\"");
            String s = (String) v;
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                boolean lone = Character.isSurrogate(c) && !(Character.isHighSurrogate(c) && i + 1 < s.length()
                        && Character.isLowSurrogate(s.charAt(i + 1)))
                        && !(Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(s.charAt(i - 1)));
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20 || lone) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            return b.append('"').toString();
        }
        return String.valueOf(v); // Boolean, Long, Double (finite: a JSON number), null marker
    }

    String text() {
        List<String> chars = Arrays.asList("a", "Z", "0", " ", "\"", "\\", "/", "\n", "\0", "\u007f", "é", "模",
                "😀", "\u2028", "\ufeff", "\ud800", "%", "&", "=");
        int n = pick(Arrays.asList(0, 1, 3, 10, 200, 5000));
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            b.append(pick(chars));
        }
        return b.toString();
    }

    Object number() {
        return pick(Arrays.<Object>asList(0L, -0.0, 1L, -1L, 5L, 9.999, 10L, 30.5, 60L, 255.9, 256L, 257L, 300L,
                301L, 599.5, 600L, 601L, 1000L, 9999L, 10000L, 12345.6, 999999.4, 1000001L, 1L << 31,
                Long.MAX_VALUE, Long.MIN_VALUE, 1e30, -1e30, 1e12, -1e12, 1e308, -1e308, 1e-300, Double.MIN_VALUE,
                r.nextDouble() * 1e6 - 1e3, (long) r.nextInt(10_000_000) - 1_000_000,
                new Raw("99999999999999999999999", "bigint"), new Raw("-0", "bigint")));
    }

    /** A string with a \\u escape of four characters, hex or not (Unicode digits among them). */
    Raw escape() {
        List<Character> cs = Arrays.asList('0', '4', 'a', 'F', 'g', '٤', '０', 'Ａ', '১');
        StringBuilder b = new StringBuilder("\"x\\u");
        boolean hex = true;
        for (int i = 0; i < 4; i++) {
            char c = pick(cs);
            hex &= c < 128 && Character.digit(c, 16) >= 0;
            b.append(c);
        }
        return new Raw(b.append("\"").toString(), hex ? "string" : "nonjson");
    }

    Object junk(int depth) {
        switch (r.nextInt(depth < 4 ? 9 : 6)) {
            case 0: return NULL;
            case 1: return r.nextBoolean();
            case 2: return number();
            case 3: return text();
            case 4: {
                String tok = pick(Arrays.asList("NaN", "Infinity", "-Infinity", "1e400", "-1e400"));
                return new Raw(tok, tok.matches(".*\\d") ? "overflow" : "nonjson");
            }
            case 5: return escape();
            case 6: {
                List<Object> a = new ArrayList<>();
                for (int i = r.nextInt(4); i > 0; i--) {
                    a.add(junk(depth + 1));
                }
                return a;
            }
            case 7: {
                List<Object[]> p = new ArrayList<>();
                for (int i = r.nextInt(4); i > 0; i--) {
                    p.add(new Object[] {pick(Arrays.asList("a", "b", "enabled", "")), junk(depth + 1)});
                }
                return new Obj(p);
            }
            default: {
                int d = pick(Arrays.asList(10, 30, 200, 5000));
                return new Raw("[".repeat(d) + "]".repeat(d), "deep");
            }
        }
    }

    static String kindOf(String key) {
        return key.equals("enabled") ? "bool" : key.equals("type") || key.equals("etag") ? "string" : "number";
    }

    static boolean isKind(Object v, String kind) {
        switch (kind) {
            case "bool": return v instanceof Boolean;
            case "string": return v instanceof String || v instanceof Raw && ((Raw) v).kind.equals("string");
            default: return v instanceof Long || v instanceof Double || v instanceof Raw && ((Raw) v).kind.equals("bigint");
        }
    }

    Object wrong(String kind) {
        List<Object> bad = new ArrayList<>();
        for (Object o : Arrays.asList(NULL, true, "60", "NaN", "", List.of(), List.of(1L), new Obj(List.of()), 60L)) {
            if (!isKind(o, kind)) {
                bad.add(o);
            }
        }
        return pick(bad);
    }

    /** v holds a raw token of one of kinds, or (dups) an object with a repeated key. */
    static boolean has(Object v, Set<String> kinds, boolean dups) {
        if (v instanceof Raw) {
            return kinds.contains(((Raw) v).kind);
        }
        if (v instanceof Obj) {
            Set<String> keys = new HashSet<>();
            for (Object[] p : ((Obj) v).pairs) {
                if ((dups && !keys.add((String) p[0])) || has(p[1], kinds, dups)) {
                    return true;
                }
            }
        }
        if (v instanceof List) {
            for (Object x : (List<?>) v) {
                if (has(x, kinds, dups)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** "invalid", "unknown", or the object's fields when valid. */
    static Object expectOf(List<Object[]> pairs) {
        Obj whole = new Obj(pairs);
        if (has(whole, Set.of("nonjson", "overflow"), true)) {
            return "invalid"; // NaN, a bad escape, a number beyond a double, a duplicate key
        }
        if (has(whole, Set.of("deep"), false)) {
            return "unknown";
        }
        Map<String, Object> o = new LinkedHashMap<>();
        for (Object[] p : pairs) {
            o.put((String) p[0], p[1]);
        }
        if (!(o.get("enabled") instanceof Boolean)) {
            return "invalid";
        }
        for (String k : new String[] {"type", "etag"}) {
            if (o.containsKey(k) && !isKind(o.get(k), "string")) {
                return "invalid";
            }
        }
        for (String k : NUMERIC) {
            if (o.containsKey(k) && !isKind(o.get(k), "number")) {
                return "invalid";
            }
        }
        Object e = o.get("etag");
        if (e != null && !sendable(e instanceof Raw ? decoded((Raw) e) : (String) e)) {
            return "invalid"; // the server would refuse it in every later poll
        }
        Object t = o.get("type");
        if (t != null && hasLoneSurrogate(t instanceof Raw ? decoded((Raw) t) : (String) t)) {
            return "invalid"; // not Unicode: refused in every SDK (sdk/testdata/config_fuzz/)
        }
        return o;
    }

    /** A UTF-16 surrogate without its pair. */
    static boolean hasLoneSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length()
                    && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return true;
            }
        }
        return false;
    }

    /** An etag the server takes back in a query: at most 256 printable ASCII characters but '"'. */
    static boolean sendable(String e) {
        return e.length() <= 256 && e.chars().allMatch(c -> c >= 0x21 && c <= 0x7e && c != '"');
    }

    /** The string a valid escape() token stands for. */
    static String decoded(Raw v) {
        return "x" + (char) Integer.parseInt(v.text.substring(4, 8), 16);
    }

    /** One hostile body and its expected outcome. */
    Object[] generate() {
        List<Object[]> pairs = new ArrayList<>();
        Object[][] base = {{"enabled", true}, {"type", "wall"}, {"sampling_interval_us", 50000L},
            {"upload_interval_s", 60L}, {"max_stack_depth", 128L}, {"poll_interval_s", 10L}, {"etag", "e1"}};
        for (Object[] p : base) {
            pairs.add(p.clone());
        }
        java.util.Collections.shuffle(pairs, r);
        for (int n = 1 + r.nextInt(4); n > 0; n--) {
            int i = r.nextInt(pairs.size());
            String key = (String) pairs.get(i)[0];
            String kind = kindOf(key);
            switch (r.nextInt(8)) {
                case 0:
                    pairs.remove(i);
                    if (pairs.isEmpty()) {
                        pairs.add(new Object[] {"enabled", false});
                    }
                    break;
                case 1: pairs.set(i, new Object[] {key, wrong(kind)}); break;
                case 2:
                    pairs.set(i, new Object[] {key, kind.equals("number") ? number()
                            : kind.equals("bool") ? (Object) r.nextBoolean() : r.nextBoolean() ? text() : escape()});
                    break;
                case 3:
                    if (kind.equals("number")) {
                        String tok = pick(Arrays.asList("NaN", "Infinity", "-Infinity", "nan", "1e400", "1E+999", "01", "1.", "+1", ".5"));
                        pairs.set(i, new Object[] {key, new Raw(tok, tok.matches("-?\\d+e\\d+|1E\\+999")
                                ? "overflow" : "nonjson")});
                    }
                    break;
                case 4: pairs.add(r.nextInt(pairs.size() + 1), new Object[] {pick(Arrays.asList("x", "y", "", "模")), junk(0)}); break;
                case 5: pairs.add(r.nextInt(pairs.size() + 1), new Object[] {key, r.nextBoolean() ? junk(0) : pairs.get(i)[1]}); break;
                case 6: pairs.set(i, new Object[] {key, junk(0)}); break;
                default: pairs.add(new Object[] {"enabled", r.nextBoolean()});
            }
        }
        String body = dump(new Obj(pairs));
        Object expect = expectOf(pairs);
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        switch (r.nextInt(10)) {
            case 0: return new Object[] {Arrays.copyOf(b, 1 + r.nextInt(b.length - 1)), "invalid"};
            case 1:
                for (int n = 1 + r.nextInt(3); n > 0; n--) {
                    b[r.nextInt(b.length)] = (byte) r.nextInt(256);
                }
                return new Object[] {b, "unknown"};
            case 2: {
                int pos = r.nextInt(body.length() + 1);
                String ins = pick(Arrays.asList(",", "}", "{", "]", "\"", ":", "\\u", "\0", " "));
                return new Object[] {(body.substring(0, pos) + ins + body.substring(pos)).getBytes(StandardCharsets.UTF_8), "unknown"};
            }
            default: return new Object[] {b, expect};
        }
    }

    static Object parse(byte[] body) {
        try {
            return Config.parse(body, Limits.DEFAULT, null);
        } catch (Config.ConfigException e) {
            return "invalid";
        } // anything else propagates and fails the test
    }

    static String describe(Object c) {
        if (!(c instanceof Config)) {
            return String.valueOf(c);
        }
        Config x = (Config) c;
        return x.enabled + "|" + x.type + "|" + x.samplingIntervalUs + "|" + x.uploadIntervalS + "|"
                + x.maxStackDepth + "|" + x.pollIntervalS + "|" + x.etag;
    }

    /** Fails unless Config.parse keeps the invariants on body (and the expectation). */
    static void check(byte[] body, Object expect) {
        Object got = parse(body);
        assertEquals(describe(got), describe(parse(body)), "not deterministic");
        if (expect.equals("invalid")) {
            assertEquals("invalid", got, "accepted an invalid config");
        }
        if (got.equals("invalid")) {
            assertTrue(expect instanceof String, "refused a valid config");
            return;
        }
        Config c = (Config) got;
        double[] values = {c.samplingIntervalUs, c.uploadIntervalS, c.maxStackDepth, c.pollIntervalS};
        for (int i = 0; i < NUMERIC.length; i++) {
            assertTrue(values[i] >= BOUNDS[i][0] && values[i] <= BOUNDS[i][1], NUMERIC[i] + " = " + values[i]);
        }
        assertTrue(c.etag == null || sendable(c.etag), "etag cannot be sent back: " + c.etag);
        String text = new String(body, StandardCharsets.UTF_8).trim();
        assertTrue(text.startsWith("{") && text.endsWith("}") && text.contains("\"enabled\""), "not an object");
        if (!(expect instanceof Map)) {
            return;
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> o = (Map<String, Object>) expect;
        assertEquals(o.get("enabled"), c.enabled, "enabled");
        for (int i = 0; i < NUMERIC.length; i++) {
            Object v = o.get(NUMERIC[i]);
            double sent = v == null ? BOUNDS[i][2] : v instanceof Raw ? Double.parseDouble(((Raw) v).text)
                    : ((Number) v).doubleValue();
            double want = Math.min(Math.max(sent, BOUNDS[i][0]), BOUNDS[i][1]);
            assertTrue(Math.abs(values[i] - want) <= (i == 0 || i == 2 ? 1 : 1e-9 * want),
                    NUMERIC[i] + ": sent " + sent + ", got " + values[i]);
        }
        for (String k : new String[] {"type", "etag"}) {
            Object v = o.get(k);
            String want = v == null ? (k.equals("type") ? "wall" : null)
                    : v instanceof Raw ? decoded((Raw) v) : (String) v;
            if (k.equals("etag") && "".equals(want)) {
                want = null;
            }
            assertEquals(want, k.equals("type") ? c.type : c.etag, k);
        }
    }

    /** Runs cases from seed until n cases or the deadline (ms); returns {cases, invalid, valid, unknown}. */
    long[] run(long seed, long n, long deadline) throws IOException {
        r.setSeed(seed);
        long[] seen = new long[4];
        for (; seen[0] < n && (deadline == 0 || seen[0] % 256 != 0 || System.currentTimeMillis() < deadline); seen[0]++) {
            Object[] g = generate();
            byte[] body = (byte[]) g[0];
            try {
                check(body, g[1]);
            } catch (Throwable e) {
                String saved = "";
                if (deadline != 0) {
                    Path f = CRASHES.resolve("crash-seed" + seed + "-case" + seen[0]);
                    Files.write(f, body);
                    saved = " (body saved in " + f + ")";
                }
                String shown = new String(body, StandardCharsets.UTF_8);
                fail("seed " + seed + ", case " + seen[0] + ", expect " + (g[1] instanceof String ? g[1] : "valid")
                        + saved + ": " + e + "; body " + shown.substring(0, Math.min(300, shown.length())), e);
            }
            seen[g[1].equals("invalid") ? 1 : g[1].equals("unknown") ? 3 : 2]++;
        }
        return seen;
    }

    @Test
    void seededHostileBodiesKeepTheInvariants() throws IOException {
        String env = System.getenv("ROOTTRACE_CONFIG_FUZZ_SECONDS");
        double seconds = env == null || env.isEmpty() ? 0 : Double.parseDouble(env);
        if (seconds > 0) {
            String s = System.getenv("ROOTTRACE_CONFIG_FUZZ_SEED");
            long seed = s == null || s.isEmpty() ? System.nanoTime() : Long.parseLong(s);
            long[] seen = run(seed, Long.MAX_VALUE, System.currentTimeMillis() + (long) (seconds * 1000));
            System.err.println("config fuzz (java): seed " + seed + ", " + seen[0] + " cases in " + seconds
                    + " s {invalid " + seen[1] + ", valid " + seen[2] + ", unknown " + seen[3] + "}");
            return;
        }
        long[] seen = run(20261130, CASES, 0);
        for (int i = 1; i < 4; i++) { // a generator stuck on one outcome would prove little
            assertTrue(seen[i] > CASES / 20, Arrays.toString(seen));
        }
    }

    @Test
    void savedFuzzInputsKeepTheInvariants() throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Files.list(CRASHES)) {
            s.filter(p -> !p.getFileName().toString().equals("README.md")).forEach(files::add);
        }
        assertFalse(files.isEmpty());
        for (Path f : files) {
            check(Files.readAllBytes(f), f.getFileName().toString().startsWith("invalid-") ? "invalid" : "unknown");
        }
    }
}
