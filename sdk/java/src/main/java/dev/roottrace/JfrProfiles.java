// JfrProfiles: the agent's CPU profiles from JFR (docs/sdk/java.md), driven by its sampler
// thread: when a config asks for cpu and JFR is there, one recording runs and is rotated at
// each upload interval; when JFR fails, wall takes over and JFR is tried again later.
package dev.roottrace;

import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;

final class JfrProfiles {
    private final Agent a;
    // All sampler thread only; the status reads the agent's volatile jfr* fields.
    private JfrSampler jfr; // the recording in progress, or null
    private boolean probed; // JfrSampler.problem() was asked
    private boolean permanent; // the agent's jfrProblem cannot go away (no jdk.jfr)
    private long retryAtNs; // when JFR is tried again after a failure
    private long startNs; // nanoTime the profile in progress began
    private long cpu0; // process CPU ns at its start

    JfrProfiles(Agent a) {
        this.a = a;
    }

    /** Whether this config gets CPU profiles from JFR now: it asks for cpu, and JFR is there
     *  and has not failed within the retry time. */
    boolean wanted(Config cfg, long now) {
        if (!Agent.CPU_TYPE.equals(cfg.type)) {
            a.jfrNote = null;
            return false;
        }
        if (!probed) {
            probed = true;
            String p = probe();
            if (p != null) {
                a.jfrProblem = p;
                permanent = true;
            }
        }
        return a.jfrProblem == null || (!permanent && now - retryAtNs >= 0);
    }

    /** Why JFR cannot be used here, or null. Never throws: a JVM without jdk.jfr fails to
     *  link JfrSampler, and that is the answer. */
    private String probe() {
        try {
            Supplier<String> probe = a.jfrProbe;
            return probe != null ? probe.get() : JfrSampler.problem();
        } catch (Throwable e) {
            return "no jdk.jfr module (" + e.getClass().getSimpleName() + ")";
        }
    }

    /** Starts a recording when none runs, waits for the end of the upload interval (or a
     *  change, or the config going stale), and rotates it then. After a failure no recording
     *  runs: the status says why, and wall takes over. */
    void step(Agent.Control c) throws InterruptedException {
        if (jfr == null) {
            long periodNs = c.config.jfrIntervalUs * 1000;
            try {
                java.util.function.Function<Set<Thread>, JfrSampler> f = a.jfrFactory;
                jfr = f != null ? f.apply(a.sdkThreads) : new JfrSampler(a.sdkThreads, a::processCpuNs);
                jfr.boundWaitsBy(() -> a.stopping ? OptionalLong.of(a.stopHalfwayNs)
                        : OptionalLong.empty());
                jfr.start(periodNs);
            } catch (Throwable e) {
                failed(e);
                return;
            }
            startNs = System.nanoTime();
            cpu0 = a.processCpuNs();
            a.jfrProblem = null;
            permanent = false;
            a.intervalNs = periodNs;
            a.jfrActive = true;
            a.profiling = true;
        }
        long end = startNs + (long) (c.config.uploadIntervalS * 1e9);
        long staleWake = c.staleAtNs() + 1;
        a.wake.await((staleWake - end < 0 ? staleWake : end) - System.nanoTime());
        long now = System.nanoTime();
        Agent.Control c2 = a.control;
        if (a.stopping || now - end < 0 || !c2.allows(now) || !wanted(c2.config, now)) {
            return; // woken early, or stopping: the loop looks at the state again
        }
        rotate(c2.config, true, false);
    }

    /** Ends the profile in progress, queues it when keep, and starts the next when again;
     *  after a failure no recording runs. exiting: the JVM is shutting down, and JFR's own
     *  hook writes the recording (JfrSampler.rotate). */
    private void rotate(Config cfg, boolean again, boolean exiting) {
        long rotatedAt = System.nanoTime();
        int depth = cfg != null ? cfg.maxStackDepth : a.limits.stackDepthMax;
        long next = again && cfg != null ? cfg.jfrIntervalUs * 1000 : 0;
        JfrSampler.Chunk ch;
        try {
            ch = jfr.rotate(next, depth, a.limits.maxStacksPerProfile, a.limits.jfrFileMaxBytes,
                    exiting);
        } catch (Throwable e) {
            failed(e);
            return;
        }
        a.jfrNote = ch.dropped;
        a.jfrEvents += ch.events;
        Uploader up = a.uploader;
        if (ch.durationNanos > 0 && up != null) {
            long cpu1 = ch.processCpuEndNs;
            Long cpu = cpu0 >= 0 && cpu1 >= cpu0 ? cpu1 - cpu0 : null;
            up.put(new Uploader.Profile(UUID.randomUUID().toString(), a.instance, ch.timeNanos,
                    ch.durationNanos, ch.periodNs, ch.samples, cpu, Agent.CPU_TYPE,
                    ch.threadCpuNs >= 0 ? ch.threadCpuNs : null));
        }
        cpu0 = ch.processCpuEndNs;
        startNs = rotatedAt;
        if (next > 0) {
            a.intervalNs = next;
            return;
        }
        a.jfrActive = false;
        jfr = null; // no next profile: rotate(0) ended the recording, and end() closes it
    }

    /** Ends the profile in progress (queued when keep), if any. */
    void end(boolean keep) {
        if (jfr == null) {
            return;
        }
        JfrSampler r = jfr;
        if (keep) {
            rotate(a.control.config, false, JfrSampler.shuttingDown());
        }
        r.close();
        jfr = null;
        a.jfrActive = false;
    }

    /** Releases a recording still running (the sampler thread's end). */
    void close() {
        if (jfr != null) {
            jfr.close();
            jfr = null;
        }
    }

    /** JFR failed (refused, disk full, ...): wall takes over, the status says why, and JFR is
     *  tried again after the retry time. Never throws but an out-of-memory error. */
    private void failed(Throwable e) {
        String msg = e.getMessage();
        a.jfrProblem = e.getClass().getSimpleName() + (msg != null && !msg.isEmpty() ? ": " + msg : "");
        retryAtNs = System.nanoTime() + (long) (a.limits.jfrRetryS * 1e9);
        a.jfrActive = false;
        JfrSampler r = jfr;
        jfr = null;
        if (r != null) {
            try {
                r.close();
            } catch (Throwable t) {
                // already broken: nothing more to do
            }
        }
        if (e instanceof VirtualMachineError && !(e instanceof StackOverflowError)) {
            throw (VirtualMachineError) e; // out of memory: guarded() stops the thread
        }
    }
}
