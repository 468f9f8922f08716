// Uploader: a bounded queue of finished profiles and the POST of one to /api/v1/profiles
// (DESIGN.md §4; answers as docs/control-plane.md says).
package dev.roottrace;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

final class Uploader {
    /** What an upload attempt came to. */
    enum Outcome {
        SENT, // 201, or 200 duplicate: stored
        DROPPED, // another 4xx: retrying cannot help
        REFUSED, // 409: profiling is off for the service
        RETRY // 5xx, 507, network: kept and retried
    }

    /** A finished profile waiting to be uploaded. */
    static final class Profile {
        final String profileId; // UUID, the same on every retry
        final String instance; // the instance it was taken in
        final long timeNanos; // start, Unix ns
        final long durationNanos; // length, ns
        final long periodNs; // effective sampling interval, ns
        final List<Encoder.Sample> samples; // root-first stacks, heaviest first
        final Long processCpuNs; // process CPU over the profile, ns; null if unknown
        final String type; // "wall" (stack walks) or "cpu" (JFR)
        final Long threadCpuNs; // CPU of the sampled threads (cpu only), ns; null if unknown
        byte[] body; // gzip pprof, made once (upload thread only)

        Profile(String profileId, String instance, long timeNanos, long durationNanos,
                long periodNs, List<Encoder.Sample> samples, Long processCpuNs) {
            this(profileId, instance, timeNanos, durationNanos, periodNs, samples, processCpuNs,
                    "wall", null);
        }

        Profile(String profileId, String instance, long timeNanos, long durationNanos,
                long periodNs, List<Encoder.Sample> samples, Long processCpuNs, String type,
                Long threadCpuNs) {
            this.type = type;
            this.threadCpuNs = threadCpuNs;
            this.profileId = profileId;
            this.instance = instance;
            this.timeNanos = timeNanos;
            this.durationNanos = durationNanos;
            this.periodNs = periodNs;
            this.samples = samples;
            this.processCpuNs = processCpuNs;
        }
    }

    private final Supplier<Http> http; // the server's upload client, made on first use
    private final Supplier<Map<String, Object>> params; // common query parameters
    private final int maxProfiles; // queue bound
    private final int maxBytes; // body bound
    private final double deadlineS; // whole-request deadline
    private final ArrayDeque<Profile> queue = new ArrayDeque<>(); // oldest first; guarded by this
    volatile long sent; // profiles stored by the server
    volatile long dropped; // profiles given up (queue full, 4xx, 409)
    volatile String lastError; // last failure, for status
    volatile String sizeNote; // why the last profile built was cut to the size bound, else null

    Uploader(Supplier<Http> http, Supplier<Map<String, Object>> params, int maxProfiles, int maxBytes,
            double deadlineS) {
        this.http = http;
        this.params = params;
        this.maxProfiles = maxProfiles;
        this.maxBytes = maxBytes;
        this.deadlineS = deadlineS;
    }

    /** Queues a profile, dropping the oldest when the queue is full. */
    synchronized void put(Profile p) {
        while (queue.size() >= maxProfiles) {
            queue.pollFirst();
            dropped++;
        }
        queue.addLast(p);
        notifyAll();
    }

    synchronized int pending() {
        return queue.size();
    }

    /** Profile ids in the queue, oldest first (tests). */
    synchronized List<String> queuedIds() {
        List<String> ids = new ArrayList<>();
        for (Profile p : queue) {
            ids.add(p.profileId);
        }
        return ids;
    }

    /** Waits up to timeoutMs for a queued profile; whether there is one. */
    synchronized boolean waitForWork(long timeoutMs) throws InterruptedException {
        if (queue.isEmpty()) {
            wait(timeoutMs);
        }
        return !queue.isEmpty();
    }

    /** Wakes a waitForWork (stop()). */
    synchronized void wake() {
        notifyAll();
    }

    /**
     * Uploads the oldest queued profile: SENT, DROPPED or REFUSED remove it from the queue;
     * RETRY leaves it. null when the queue is empty.
     */
    Outcome uploadOne() {
        Profile p;
        synchronized (this) {
            p = queue.peekFirst();
        }
        if (p == null) {
            return null;
        }
        if (p.body == null) {
            int[] kept = new int[2];
            p.body = buildBody(p, maxBytes, kept);
            sizeNote = kept[0] == kept[1] ? null
                    : "last profile cut to " + maxBytes + " bytes: " + (kept[1] - kept[0])
                            + " of " + kept[1] + " stacks folded into " + Sampler.TRIMMED;
        }
        Map<String, Object> q = new LinkedHashMap<>(params.get());
        q.put("instance", p.instance);
        q.put("profile_id", p.profileId);
        q.put("thread_cpu_ns", p.threadCpuNs);
        q.put("process_cpu_ns", p.processCpuNs);
        Http.Response r;
        Http h = http.get();
        if (h == null) {
            lastError = "upload abandoned: stop() flush deadline passed";
            return Outcome.RETRY;
        }
        try {
            r = h.request("POST", "/api/v1/profiles", q, p.body, deadlineS, 64 * 1024);
        } catch (Http.Aborted e) {
            lastError = "upload abandoned: stop() flush deadline passed";
            return Outcome.RETRY;
        } catch (Http.HttpFailure e) {
            lastError = "upload failed: " + e.getMessage();
            return Outcome.RETRY;
        }
        Outcome o = classify(r.status);
        if (o == Outcome.RETRY) {
            lastError = "upload answered " + r.status;
            return o;
        }
        if (o != Outcome.SENT) {
            String text = new String(r.body, 0, Math.min(r.body.length, 120),
                    java.nio.charset.StandardCharsets.UTF_8);
            lastError = "upload answered " + r.status + ": " + text;
        }
        synchronized (this) {
            if (queue.peekFirst() == p) {
                queue.pollFirst();
            }
            if (o == Outcome.SENT) {
                sent++;
            } else {
                dropped++;
            }
        }
        return o;
    }

    /** The outcome of an upload answered with HTTP {@code status} (docs/control-plane.md). */
    static Outcome classify(int status) {
        if (status == 200 || status == 201) {
            return Outcome.SENT;
        }
        if (status == 409) {
            return Outcome.REFUSED;
        }
        if (status >= 400 && status < 500) {
            return Outcome.DROPPED;
        }
        return Outcome.RETRY; // 5xx, 507, and anything unexpected (1xx, 3xx)
    }

    /**
     * The gzip pprof body, at most maxBytes: when too large, the lightest stacks are folded
     * into one "(trimmed)" stack (counts and values kept) until it fits. Samples come
     * heaviest first.
     */
    static byte[] buildBody(Profile p, int maxBytes) {
        return buildBody(p, maxBytes, new int[2]);
    }

    /** The same; kept[0] receives the stacks kept whole, kept[1] the stacks there were (both
     *  without the "(trimmed)" stack). */
    static byte[] buildBody(Profile p, int maxBytes, int[] keptOut) {
        byte[] body = make(p, p.samples);
        List<Encoder.Sample> base = new ArrayList<>();
        List<Encoder.Sample> extra = new ArrayList<>();
        for (Encoder.Sample s : p.samples) {
            boolean trimmed = s.rootFirst.length == 1 && Sampler.TRIMMED.equals(s.rootFirst[0]);
            (trimmed ? extra : base).add(s);
        }
        int keep = base.size();
        while (body.length > maxBytes && keep > 0) {
            keep /= 2;
            long count = 0;
            long value = 0;
            for (Encoder.Sample s : base.subList(keep, base.size())) {
                count += s.count;
                value += s.valueNs;
            }
            for (Encoder.Sample s : extra) {
                count += s.count;
                value += s.valueNs;
            }
            List<Encoder.Sample> kept = new ArrayList<>(base.subList(0, keep));
            kept.add(new Encoder.Sample(new String[] {Sampler.TRIMMED}, count, value));
            body = make(p, kept);
        }
        keptOut[0] = keep;
        keptOut[1] = base.size();
        return body;
    }

    private static byte[] make(Profile p, List<Encoder.Sample> samples) {
        return Encoder.compress(Encoder.encode(p.type, p.timeNanos, p.durationNanos, p.periodNs,
                samples));
    }

    /** Delay before retry {@code attempt} (1, 2, ...): doubling from lo, at most hi, with
     *  +-20 % jitter; seconds. */
    static double backoff(int attempt, double lo, double hi) {
        double d = Math.min(hi, lo * Math.pow(2, Math.min(attempt - 1, 30)));
        return Math.min(hi, d * ThreadLocalRandom.current().nextDouble(0.8, 1.2));
    }
}
