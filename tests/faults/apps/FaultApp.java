// The Java SDK's fault application (tests/faults/run.py): request-like units of work (string
// building and sha256, ~1 ms) every ~4 ms on the main thread, each unit's latency measured from
// when it was due (so time the thread could not run, safepoint pauses included, counts),
// reported with the SDK's status once a second as one JSON line. Stops, flushing the SDK, when
// stdin closes. Env: RT_SERVER, RT_KEY, RT_SERVICE, RT_INSTANCE.
import dev.roottrace.Options;
import dev.roottrace.RootTrace;
import dev.roottrace.Status;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

public final class FaultApp {
    static int unit(int seed) throws Exception {
        StringBuilder sb = new StringBuilder("{\"id\":").append(seed).append(",\"lines\":[");
        for (int j = 0; j < 40; j++) {
            sb.append("{\"sku\":\"SKU-").append((seed * 31 + j) % 997).append("\",\"qty\":")
                    .append(j % 7 + 1).append("},");
        }
        String text = sb.append("]}").toString();
        int s = 0;
        for (String part : text.split("\"qty\":")) {
            s += part.length();
        }
        byte[] h = MessageDigest.getInstance("SHA-256").digest(text.getBytes("UTF-8"));
        return s + h[0];
    }

    static void emit(StringBuilder units, boolean fin) {
        Status st = RootTrace.status();
        String status = st.status().replace("\\", "\\\\").replace("\"", "\\\"");
        System.out.println("{\"t\":" + System.currentTimeMillis() / 1000.0 + ",\"u\":[" + units
                + "],\"status\":\"" + status + "\",\"queued\":" + st.profilesQueued()
                + ",\"sent\":" + st.profilesSent() + ",\"dropped\":" + st.profilesDropped()
                + ",\"last_error\":\"" + String.valueOf(st.lastError()).replace("\\", "\\\\")
                        .replace("\"", "\\\"") + "\",\"final\":" + fin + "}");
        System.out.flush();
        units.setLength(0);
    }

    public static void main(String[] args) throws Exception {
        RootTrace.start(new Options().server(System.getenv("RT_SERVER"))
                .key(System.getenv("RT_KEY")).service(System.getenv("RT_SERVICE"))
                .instance(System.getenv("RT_INSTANCE"))
                .version("faults-1"));
        AtomicBoolean done = new AtomicBoolean();
        Thread reader = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (Exception e) {
                // stdin gone: stop
            }
            done.set(true);
        });
        reader.setDaemon(true);
        reader.start();
        StringBuilder units = new StringBuilder();
        long last = System.nanoTime();
        long due = System.nanoTime();
        long sink = 0;
        for (int i = 0; !done.get(); i++) {
            long wait = due - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
            for (int k = 0; k < 4; k++) {
                sink += unit(i);
            }
            long end = System.nanoTime();
            long dueMs = System.currentTimeMillis() - (end - due) / 1_000_000;
            if (units.length() > 0) {
                units.append(',');
            }
            units.append('[').append(dueMs).append(',').append((end - due) / 1000).append(']');
            due = end + 4_000_000;
            if (end - last >= 1_000_000_000L) {
                emit(units, false);
                last = end;
            }
        }
        RootTrace.stop(Duration.ofSeconds(5));
        emit(units, true);
        if (sink == 42) {
            System.err.println("");
        }
    }
}
