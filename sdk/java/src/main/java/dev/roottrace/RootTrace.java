// RootTrace: the SDK's public entry points (start, stop, status).
package dev.roottrace;

import java.time.Duration;

/**
 * RootTrace Java SDK: wall-clock profiles of the application's threads, uploaded to a
 * self-hosted RootTrace server while an operator has profiling turned on for the service.
 *
 * <pre>
 * RootTrace.start(new Options().server("http://roottrace:4040").key("rt_...")
 *         .service("checkout").version("1.4.2"));
 * ...
 * RootTrace.stop(Duration.ofSeconds(5));
 * </pre>
 *
 * Or with no code change: {@code java -javaagent:roottrace-agent.jar=service=checkout,
 * server=http://roottrace:4040,key=rt_... -jar app.jar}.
 *
 * <p>Nothing here throws into the application: problems show in {@link #status()}. The SDK
 * runs on daemon threads of its own and flushes at JVM exit (at most 5 s).
 */
public final class RootTrace {
    private static Agent agent; // the current agent; guarded by RootTrace.class
    private static boolean hooked; // the shutdown hook is registered

    private RootTrace() {
    }

    /**
     * Starts the SDK: it polls the server's control plane and profiles while it says so.
     * A second start() while running does nothing. Missing or invalid options give status
     * {@code error: ...} and start no thread. Never throws.
     *
     * @param options server URL (else env ROOTTRACE_SERVER), ingest key (else env
     *     ROOTTRACE_KEY), service name, optional version and instance
     */
    public static void start(Options options) {
        start(options, Limits.DEFAULT);
    }

    static synchronized Agent start(Options options, Limits limits) {
        try {
            if (agent != null && agent.running()) {
                return agent;
            }
            Agent a = new Agent(options == null ? new Options() : options, limits,
                    Thread::getAllStackTraces);
            agent = a;
            a.start();
            if (a.fatal == null && !hooked) {
                hooked = true;
                Thread hook = new Thread(RootTrace::stopAtExit, "roottrace-shutdown");
                a.sdkThreads.add(hook);
                Runtime.getRuntime().addShutdownHook(hook);
            }
            return a;
        } catch (Throwable e) { // never into the application
            return agent;
        }
    }

    private static void stopAtExit() {
        stop(Duration.ofMillis((long) (Limits.FLUSH_TIMEOUT_S * 1000)));
    }

    /**
     * Stops profiling, uploads the profile in progress and what is queued, waiting at most
     * {@code timeout} (and never more than 5 s; null means 5 s). Never throws.
     */
    public static void stop(Duration timeout) {
        try {
            Agent a;
            synchronized (RootTrace.class) {
                a = agent;
            }
            if (a != null) {
                a.stop(timeout == null ? Limits.FLUSH_TIMEOUT_S : timeout.toNanos() / 1e9);
            }
        } catch (Throwable e) { // never into the application
            // nothing to do
        }
    }

    /** {@link #stop(Duration)} waiting at most 5 s. */
    public static void stop() {
        stop(null);
    }

    /** The SDK's state now; {@code disabled: not started} before start(). Never throws. */
    public static Status status() {
        try {
            Agent a;
            synchronized (RootTrace.class) {
                a = agent;
            }
            if (a != null) {
                return a.status();
            }
            return new Status(StatusText.format(StatusText.DISABLED, "not started"),
                    Limits.DEFAULT_SAMPLING_INTERVAL_US, null, null, 0, 0, 0, 0, 0, null);
        } catch (Throwable e) {
            return new Status(StatusText.format(StatusText.ERROR, "status: " + e), 0, null, null,
                    0, 0, 0, 0, 0, String.valueOf(e));
        }
    }
}
