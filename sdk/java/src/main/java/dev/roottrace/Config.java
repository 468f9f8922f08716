// Config: validation and clamping of what the control plane sends (DESIGN.md §5,
// docs/control-plane.md). The bounds themselves live in Limits.
package dev.roottrace;

import java.util.Map;

/** A valid, clamped config from the control plane. Immutable. */
final class Config {
    /** A config answer that is invalid as a whole (wrong type, NaN, malformed JSON). */
    static final class ConfigException extends Exception {
        private static final long serialVersionUID = 1L;

        ConfigException(String message) {
            super(message);
        }
    }

    final boolean enabled; // profiling on for this service
    final String type; // the profile type the operator asked for ("cpu", "wall", ...)
    final long samplingIntervalUs; // clamped sampling interval, microseconds
    final long jfrIntervalUs; // JFR's period from the same field, clamped to its own bounds
    final double uploadIntervalS; // clamped upload interval (profile length), seconds
    final int maxStackDepth; // clamped stack depth, frames
    final double pollIntervalS; // clamped poll interval, seconds
    final String etag; // the config's version, sent back on the next poll; null if none

    Config(boolean enabled, String type, long samplingIntervalUs, double uploadIntervalS,
            int maxStackDepth, double pollIntervalS, String etag) {
        this(enabled, type, samplingIntervalUs, Limits.JFR_INTERVAL_MAX_US, uploadIntervalS,
                maxStackDepth, pollIntervalS, etag);
    }

    Config(boolean enabled, String type, long samplingIntervalUs, long jfrIntervalUs,
            double uploadIntervalS, int maxStackDepth, double pollIntervalS, String etag) {
        this.enabled = enabled;
        this.type = type;
        this.samplingIntervalUs = samplingIntervalUs;
        this.jfrIntervalUs = jfrIntervalUs;
        this.uploadIntervalS = uploadIntervalS;
        this.maxStackDepth = maxStackDepth;
        this.pollIntervalS = pollIntervalS;
        this.etag = etag;
    }

    /**
     * Validates and clamps a config answer (a JSON object). Out-of-range numbers are clamped
     * to the nearest bound; a wrong type, NaN/Infinity, a duplicate key or malformed JSON
     * throws: the whole config is then invalid (DESIGN §5). {@code headerEtag} is the ETag
     * header, used when the body carries no "etag".
     */
    static Config parse(byte[] body, Limits lim, String headerEtag) throws ConfigException {
        if (body.length > lim.configMaxBytes) {
            throw new ConfigException("config larger than " + lim.configMaxBytes + " bytes");
        }
        Object root;
        try {
            root = Json.parse(body);
        } catch (Json.JsonException e) {
            throw new ConfigException("malformed JSON: " + e.getMessage());
        }
        if (!(root instanceof Map)) {
            throw new ConfigException("config is not a JSON object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> o = (Map<String, Object>) root;
        if (!o.containsKey("enabled")) {
            throw new ConfigException("enabled is missing");
        }
        if (!(o.get("enabled") instanceof Boolean)) {
            throw new ConfigException("enabled is not a boolean");
        }
        boolean enabled = (Boolean) o.get("enabled");
        String type = string(o, "type", "wall");
        String header = unquoteEtag(headerEtag);
        String etag = string(o, "etag", header != null && validEtag(header) ? header : null);
        if (etag != null && !validEtag(etag)) {
            throw new ConfigException("etag is not at most " + ETAG_MAX_LEN + " printable ASCII characters");
        }
        double interval = number(o, "sampling_interval_us", lim.defaultSamplingIntervalUs,
                lim.samplingIntervalMinUs, lim.samplingIntervalMaxUs);
        double jfr = number(o, "sampling_interval_us", lim.defaultSamplingIntervalUs,
                lim.jfrIntervalMinUs, lim.jfrIntervalMaxUs);
        double upload = number(o, "upload_interval_s", lim.defaultUploadIntervalS,
                lim.uploadIntervalMinS, lim.uploadIntervalMaxS);
        double depth = number(o, "max_stack_depth", lim.stackDepthMax, lim.stackDepthMin,
                lim.stackDepthMax);
        double poll = number(o, "poll_interval_s", lim.defaultPollIntervalS,
                lim.pollIntervalMinS, lim.pollIntervalMaxS);
        return new Config(enabled, type, Math.round(interval), Math.round(jfr), upload, (int) depth,
                poll,
                etag == null || etag.isEmpty() ? null : etag);
    }

    private static String string(Map<String, Object> o, String key, String dflt)
            throws ConfigException {
        if (!o.containsKey(key)) {
            return dflt;
        }
        Object v = o.get(key);
        if (!(v instanceof String)) {
            throw new ConfigException(key + " is not a string");
        }
        String s = (String) v;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean paired = Character.isHighSurrogate(c) && i + 1 < s.length()
                    && Character.isLowSurrogate(s.charAt(i + 1));
            if (paired) {
                i++;
            } else if (Character.isSurrogate(c)) {
                // as every SDK (sdk/testdata/config_fuzz/invalid-lone-surrogate-*)
                throw new ConfigException(key + " is not valid Unicode (a lone surrogate)");
            }
        }
        return s;
    }

    /** The field clamped to [lo, hi]; dflt (clamped) when absent; throws on a wrong type. */
    private static double number(Map<String, Object> o, String key, double dflt, double lo,
            double hi) throws ConfigException {
        if (!o.containsKey(key)) {
            return Math.min(Math.max(dflt, lo), hi);
        }
        Object v = o.get(key);
        if (!(v instanceof Number)) {
            throw new ConfigException(key + " is not a number");
        }
        double d = ((Number) v).doubleValue();
        if (!Double.isFinite(d)) {
            throw new ConfigException(key + " is not finite");
        }
        return Math.min(Math.max(d, lo), hi);
    }

    /**
     * An etag is sent back in every poll's query: at most this many characters, each printable
     * ASCII but '"' (RFC 9110's etagc without obs-text). The server's are 64 hex digits; a
     * longer one (up to the 64 KiB body) makes the server refuse every later poll with 414,
     * and the SDK would stay off for good.
     */
    static final int ETAG_MAX_LEN = 256;

    /** True when v can be sent back as a poll's etag (see ETAG_MAX_LEN); "" is no etag. */
    static boolean validEtag(String v) {
        if (v.length() > ETAG_MAX_LEN) {
            return false;
        }
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c < 0x21 || c > 0x7e || c == '"') {
                return false;
            }
        }
        return true;
    }

    /** An ETag header's opaque value: {@code W/"abc"} and {@code "abc"} give {@code abc}. */
    static String unquoteEtag(String v) {
        if (v == null) {
            return null;
        }
        v = v.trim();
        if (v.startsWith("W/")) {
            v = v.substring(2);
        }
        if (v.length() >= 2 && v.charAt(0) == '"' && v.charAt(v.length() - 1) == '"') {
            v = v.substring(1, v.length() - 1);
        }
        return v;
    }
}
