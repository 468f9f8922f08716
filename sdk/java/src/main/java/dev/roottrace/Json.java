// Json: a minimal strict JSON reader (RFC 8259) for config answers and the test vectors.
// NaN, Infinity, trailing commas, comments, duplicate keys and deep nesting are refused.
package dev.roottrace;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses JSON text into {@code Map<String, Object>} (objects, key order kept),
 * {@code List<Object>}, {@code String}, {@code Long} (an integer that fits), {@code Double}
 * (any other number; one too large for a double is refused), {@code Boolean} and
 * {@link #NULL}.
 */
final class Json {
    /** JSON {@code null} (Java null is never a value). */
    static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };
    /** Deepest nesting of arrays and objects accepted (a config has depth 1). */
    static final int MAX_DEPTH = 64;

    /** The text is not valid JSON, or is JSON this reader refuses. */
    static final class JsonException extends Exception {
        private static final long serialVersionUID = 1L;

        JsonException(String message) {
            super(message);
        }
    }

    private final String s; // the text
    private int pos; // next character to read

    private Json(String s) {
        this.s = s;
    }

    /** Parses UTF-8 bytes (invalid UTF-8 is refused). */
    static Object parse(byte[] utf8) throws JsonException {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(utf8)).toString();
        } catch (CharacterCodingException e) {
            throw new JsonException("not valid UTF-8");
        }
        return parse(text);
    }

    /** Parses one JSON value filling the whole text (whitespace aside). */
    static Object parse(String text) throws JsonException {
        Json p = new Json(text);
        p.skipSpace();
        Object v = p.value(0);
        p.skipSpace();
        if (p.pos != p.s.length()) {
            throw p.error("trailing characters");
        }
        return v;
    }

    private JsonException error(String what) {
        return new JsonException(what + " at offset " + pos);
    }

    private void skipSpace() {
        while (pos < s.length()) {
            char c = s.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private Object value(int depth) throws JsonException {
        if (pos >= s.length()) {
            throw error("unexpected end");
        }
        char c = s.charAt(pos);
        switch (c) {
            case '{':
                return object(depth + 1);
            case '[':
                return array(depth + 1);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", NULL);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character");
        }
    }

    private Object literal(String word, Object v) throws JsonException {
        if (!s.startsWith(word, pos)) {
            throw error("bad literal");
        }
        pos += word.length();
        return v;
    }

    private Map<String, Object> object(int depth) throws JsonException {
        if (depth > MAX_DEPTH) {
            throw error("nested too deep");
        }
        pos++; // '{'
        Map<String, Object> m = new LinkedHashMap<>();
        skipSpace();
        if (pos < s.length() && s.charAt(pos) == '}') {
            pos++;
            return m;
        }
        while (true) {
            skipSpace();
            if (pos >= s.length() || s.charAt(pos) != '"') {
                throw error("expected a key");
            }
            String k = string();
            skipSpace();
            expect(':');
            skipSpace();
            Object v = value(depth);
            if (m.put(k, v) != null) {
                throw error("duplicate key \"" + k + "\"");
            }
            skipSpace();
            if (pos < s.length() && s.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect('}');
            return m;
        }
    }

    private List<Object> array(int depth) throws JsonException {
        if (depth > MAX_DEPTH) {
            throw error("nested too deep");
        }
        pos++; // '['
        List<Object> a = new ArrayList<>();
        skipSpace();
        if (pos < s.length() && s.charAt(pos) == ']') {
            pos++;
            return a;
        }
        while (true) {
            skipSpace();
            a.add(value(depth));
            skipSpace();
            if (pos < s.length() && s.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect(']');
            return a;
        }
    }

    private void expect(char c) throws JsonException {
        if (pos >= s.length() || s.charAt(pos) != c) {
            throw error("expected '" + c + "'");
        }
        pos++;
    }

    private String string() throws JsonException {
        pos++; // opening quote
        StringBuilder b = new StringBuilder();
        while (true) {
            if (pos >= s.length()) {
                throw error("unterminated string");
            }
            char c = s.charAt(pos++);
            if (c == '"') {
                return b.toString();
            }
            if (c < 0x20) {
                throw error("control character in string");
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (pos >= s.length()) {
                throw error("unterminated escape");
            }
            char e = s.charAt(pos++);
            switch (e) {
                case '"': b.append('"'); break;
                case '\\': b.append('\\'); break;
                case '/': b.append('/'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'n': b.append('\n'); break;
                case 'r': b.append('\r'); break;
                case 't': b.append('\t'); break;
                case 'u': b.append(hex4()); break;
                default: throw error("bad escape");
            }
        }
    }

    private char hex4() throws JsonException {
        if (pos + 4 > s.length()) {
            throw error("bad \\u escape");
        }
        int v = 0;
        for (int i = 0; i < 4; i++) {
            char c = s.charAt(pos++);
            // ASCII hex only: Character.digit also takes other scripts' digits ('٤', '０'),
            // which would let invalid JSON through (found by fuzzing).
            int d = c < 128 ? Character.digit(c, 16) : -1;
            if (d < 0) {
                throw error("bad \\u escape");
            }
            v = v * 16 + d;
        }
        return (char) v;
    }

    /** A number exactly as RFC 8259 writes it: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
    private Number number() throws JsonException {
        int start = pos;
        boolean integer = true;
        if (s.charAt(pos) == '-') {
            pos++;
        }
        if (pos < s.length() && s.charAt(pos) == '0') {
            pos++;
        } else if (digits() == 0) {
            throw error("bad number");
        }
        if (pos < s.length() && s.charAt(pos) == '.') {
            pos++;
            integer = false;
            if (digits() == 0) {
                throw error("bad number");
            }
        }
        if (pos < s.length() && (s.charAt(pos) == 'e' || s.charAt(pos) == 'E')) {
            pos++;
            integer = false;
            if (pos < s.length() && (s.charAt(pos) == '+' || s.charAt(pos) == '-')) {
                pos++;
            }
            if (digits() == 0) {
                throw error("bad number");
            }
        }
        String text = s.substring(start, pos);
        if (integer && pos - start <= 19) {
            try {
                return Long.parseLong(text);
            } catch (NumberFormatException e) {
                // beyond a long: a double below
            }
        }
        double d = Double.parseDouble(text);
        if (Double.isInfinite(d) || Double.isNaN(d)) {
            throw new JsonException("number out of range at offset " + start);
        }
        return d;
    }

    private int digits() {
        int n = 0;
        while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') {
            pos++;
            n++;
        }
        return n;
    }
}
