// Names: service and instance names as the server accepts them (1-200 bytes of UTF-8, no
// control characters, no '/'), so a name it would refuse is refused here instead of leaving
// the instance `waiting` forever. Same rule as sdk/python names.py.
package dev.roottrace;

import java.nio.charset.StandardCharsets;

final class Names {
    /** The server's limit on service and instance names, in UTF-8 bytes. */
    static final int NAME_MAX_BYTES = 200;

    private Names() {
    }

    private static boolean isControl(int cp) {
        return cp < 0x20 || cp == 0x7f;
    }

    /** null when the server accepts {@code name}, else why not (printable ASCII). */
    static String problem(String name) {
        if (name == null) {
            return "missing";
        }
        if (name.isEmpty()) {
            return "empty";
        }
        for (int i = 0; i < name.length(); ) {
            int cp = name.codePointAt(i);
            if (cp >= 0xd800 && cp <= 0xdfff) {
                return "not valid UTF-8: lone surrogate";
            }
            if (cp == '/') {
                return "contains '/'";
            }
            if (isControl(cp)) {
                return "control character U+" + hex4(cp).toUpperCase(java.util.Locale.ROOT);
            }
            i += Character.charCount(cp);
        }
        int n = name.getBytes(StandardCharsets.UTF_8).length;
        if (n > NAME_MAX_BYTES) {
            return n + " bytes, at most " + NAME_MAX_BYTES;
        }
        return null;
    }

    /** {@code s} made acceptable inside a name: '/' and control characters become '-', cut
     *  to at most maxBytes of UTF-8 on a character boundary. */
    static String safePart(String s, int maxBytes) {
        StringBuilder b = new StringBuilder();
        int bytes = 0;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == '/' || isControl(cp) || (cp >= 0xd800 && cp <= 0xdfff)) {
                cp = '-';
            }
            int len = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8).length;
            if (bytes + len > maxBytes) {
                break;
            }
            bytes += len;
            b.appendCodePoint(cp);
        }
        return b.toString();
    }

    /**
     * {@code v} in lower-case hexadecimal, zero-padded to at least 4 digits (what
     * {@code String.format("%04x", v)} gives for v >= 0), without {@code Formatter}: it parses
     * its format with a regex, and the SDK runs none in the application's process
     * (docs/decisions-sdk.md). A negative v is taken as unsigned.
     */
    static String hex4(int v) {
        String h = Integer.toHexString(v);
        return h.length() >= 4 ? h : "0000".substring(h.length()) + h;
    }
}
