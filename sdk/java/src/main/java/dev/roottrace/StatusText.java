// StatusText: the `<state>[: <reason>]` string every config poll carries and status()
// shows (DESIGN.md §5, docs/control-plane.md).
package dev.roottrace;

/** Formatting of status strings, always within the grammar {@link #GRAMMAR}. */
final class StatusText {
    static final String PROFILING = "profiling";
    static final String DISABLED = "disabled";
    static final String WAITING = "waiting";
    static final String UNAVAILABLE = "unavailable";
    static final String DECLINED = "declined";
    static final String ERROR = "error";
    /** Reasons are at most 200 printable ASCII characters. */
    static final int REASON_MAX = 200;
    /** The grammar as a regular expression, for tests and for anyone checking a status
     * string. A string, not a compiled {@code Pattern}: the SDK runs no regex in the
     * application's process (docs/decisions-sdk.md, "The Java SDK runs no regular
     * expression"). */
    static final String GRAMMAR =
            "^(profiling|disabled|waiting|unavailable|declined|error)(: [\\x20-\\x7e]{1,200})?$";

    private StatusText() {
    }

    /** The reason as printable ASCII (anything else becomes '?'), at most 200 characters. */
    static String cleanReason(String reason) {
        StringBuilder b = new StringBuilder(Math.min(reason.length(), 4 * REASON_MAX));
        for (int i = 0; i < reason.length() && b.length() < 2 * REASON_MAX; ) {
            int cp = reason.codePointAt(i);
            b.append(cp >= 0x20 && cp <= 0x7e ? (char) cp : '?');
            i += Character.charCount(cp);
        }
        String r = b.toString().trim();
        if (r.length() > REASON_MAX) {
            r = r.substring(0, REASON_MAX);
        }
        return r.stripTrailing();
    }

    /** {@code state} or {@code state: reason}; an unknown state becomes "error". */
    static String format(String state, String reason) {
        switch (state == null ? "" : state) {
            case PROFILING: case DISABLED: case WAITING: case UNAVAILABLE: case DECLINED:
            case ERROR:
                break;
            default:
                state = ERROR;
        }
        if (reason != null) {
            String r = cleanReason(reason);
            if (!r.isEmpty()) {
                return state + ": " + r;
            }
        }
        return state;
    }
}
