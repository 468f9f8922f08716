// Status: a snapshot of the SDK's state, as RootTrace.status() returns it.
package dev.roottrace;

/**
 * What the SDK is doing, at one moment. Immutable. The accessors are the fields every SDK's
 * status has (docs/sdk/README.md, "One vocabulary"), in that order, then
 * {@link #medianWalkUs()}; {@link #toString()} is the status string.
 */
public final class Status {
    private final String status;
    private final long intervalUs;
    private final String service;
    private final String instance;
    private final long profilesSent;
    private final long profilesDropped;
    private final int profilesQueued;
    private final long samples;
    private final double medianWalkUs;
    private final String lastError;

    Status(String status, long intervalUs, String service, String instance, long profilesSent,
            long profilesDropped, int profilesQueued, long samples, double medianWalkUs,
            String lastError) {
        this.status = status;
        this.intervalUs = intervalUs;
        this.service = service;
        this.instance = instance;
        this.profilesSent = profilesSent;
        this.profilesDropped = profilesDropped;
        this.profilesQueued = profilesQueued;
        this.samples = samples;
        this.medianWalkUs = medianWalkUs;
        this.lastError = lastError;
    }

    /** {@code <state>[: <reason>]} as sent to the server, e.g.
     *  {@code profiling: cpu not supported, sending wall}. */
    public String status() {
        return status;
    }

    /** The state alone: profiling, disabled, waiting, unavailable, declined or error. */
    public String state() {
        int i = status.indexOf(':');
        return i < 0 ? status : status.substring(0, i);
    }

    /** The part of {@link #status()} after {@code <state>: }, e.g.
     *  {@code cpu not supported, sending wall}, or {@code ""} when there is none. */
    public String reason() {
        int i = status.indexOf(": ");
        return i < 0 ? "" : status.substring(i + 2);
    }

    /** The effective sampling interval, microseconds (configured, clamped to 20 ms-1 s,
     *  lengthened by the self-cost budget). */
    public long intervalUs() {
        return intervalUs;
    }

    /** The service name, or null when none was given. */
    public String service() {
        return service;
    }

    /** This process's instance name, or null before start(). */
    public String instance() {
        return instance;
    }

    /** Profiles the server stored. */
    public long profilesSent() {
        return profilesSent;
    }

    /** Profiles given up: queue full while the server was away, 4xx, 409. */
    public long profilesDropped() {
        return profilesDropped;
    }

    /** Profiles waiting to be uploaded. */
    public int profilesQueued() {
        return profilesQueued;
    }

    /** Samples taken since start (one sample walks every application thread). */
    public long samples() {
        return samples;
    }

    /** The last problem seen (poll, config, upload), or null. */
    public String lastError() {
        return lastError;
    }

    /** Median wall time of the recent stack walks, microseconds (the JVM pause a sample
     *  costs). */
    public double medianWalkUs() {
        return medianWalkUs;
    }

    /** The status as one JSON object (for logs and the benchmark), the fields in the
     *  order above, named as in the other SDKs ({@code interval_us}, ...). */
    public String toJson() {
        return "{\"status\":" + quote(status) + ",\"state\":" + quote(state())
                + ",\"reason\":" + quote(reason())
                + ",\"interval_us\":" + intervalUs + ",\"service\":" + quote(service)
                + ",\"instance\":" + quote(instance) + ",\"profiles_sent\":" + profilesSent
                + ",\"profiles_dropped\":" + profilesDropped + ",\"profiles_queued\":"
                + profilesQueued + ",\"samples\":" + samples + ",\"last_error\":"
                + quote(lastError) + ",\"median_walk_us\":" + medianWalkUs + "}";
    }

    /** The status string, {@link #status()}; {@link #toJson()} has every field. */
    @Override
    public String toString() {
        return status;
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append("\\u").append(Names.hex4(c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
