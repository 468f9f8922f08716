// E2eServer: the real server (`roottrace serve`) and a child JVM under -javaagent, as the
// end-to-end tests use them (EndToEndTest): one place for their start, the ingest key, the
// toggle, and their cleanup. Tests only.
package dev.roottrace;

import static dev.roottrace.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

final class E2eServer implements AutoCloseable {
    final Path tmp;
    final String url;
    final String key; // an ingest key, given to the child as ROOTTRACE_KEY
    private final EndToEndTest t;
    private final Process server;
    Process child;
    BufferedReader childOut; // the child's stdout, after its "started <instance>" line
    String instance; // the child's instance name

    private E2eServer(EndToEndTest t, Path tmp, String url, Process server, String key) {
        this.t = t;
        this.tmp = tmp;
        this.url = url;
        this.server = server;
        this.key = key;
    }

    /** Starts the server (polls every 1 s) on a free port, waits until it is healthy, makes
     *  an ingest key and sets the test service's toggle to {@code toggle} (a JSON body). */
    static E2eServer start(EndToEndTest t, Path tmp, String toggle) throws Exception {
        Path bin = EndToEndTest.serverBinary();
        int port = EndToEndTest.freePort();
        String url = "http://127.0.0.1:" + port;
        ProcessBuilder pb = new ProcessBuilder(bin.toString(), "serve", "--data", tmp.resolve("data").toString(),
                "--listen", "127.0.0.1:" + port, "--poll-interval", "1s");
        pb.environment().put("ROOTTRACE_BOOTSTRAP_TOKEN", EndToEndTest.ADMIN);
        pb.redirectErrorStream(true).redirectOutput(tmp.resolve("server.log").toFile());
        Process server = pb.start();
        try {
            assertTrue(waitFor(() -> {
                try {
                    return t.call("GET", url + "/healthz", null).statusCode() == 200;
                } catch (Exception e) {
                    return false;
                }
            }, 20), "server not healthy: " + Files.readString(tmp.resolve("server.log")));
            HttpResponse<String> k = t.call("POST", url + "/api/v1/keys", "{\"scope\":\"ingest\",\"name\":\"e2e\"}");
            assertEquals(201, k.statusCode(), k.body());
            String key = (String) EndToEndTest.obj(k.body()).get("key");
            E2eServer s = new E2eServer(t, tmp, url, server, key);
            s.toggle(toggle);
            return s;
        } catch (Throwable e) {
            stop(server);
            throw e;
        }
    }

    /** Sets the test service's toggle (a JSON body); asserts 200. */
    void toggle(String json) throws Exception {
        HttpResponse<String> r = t.call("PUT", url + "/api/v1/services/" + EndToEndTest.SERVICE + "/profiling", json);
        assertEquals(200, r.statusCode(), r.body());
    }

    /** Starts E2eChild under the agent jar (its arguments: service, server, then
     *  {@code agentExtra} when not empty), the key in ROOTTRACE_KEY, {@code jvmOptions} before
     *  -javaagent, and reads its "started <instance>" line. Its stderr goes to child.err. */
    void startChild(String agentExtra, String... jvmOptions) throws Exception {
        String javaBin = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(javaBin));
        cmd.addAll(List.of(jvmOptions));
        cmd.addAll(List.of("-javaagent:" + EndToEndTest.agentJar(tmp) + "=service=" + EndToEndTest.SERVICE
                + ",server=" + url + (agentExtra.isEmpty() ? "" : "," + agentExtra),
                "-cp", Paths.get(System.getProperty("user.dir"), "target", "test-classes").toString(),
                "dev.roottrace.E2eChild"));
        ProcessBuilder cb = new ProcessBuilder(cmd);
        cb.environment().put("ROOTTRACE_KEY", key); // the key from the environment
        cb.redirectError(tmp.resolve("child.err").toFile());
        child = cb.start();
        childOut = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        String first = childOut.readLine(); // "started <instance>"
        assertTrue(first != null && first.startsWith("started "), first + " " + childErr());
        instance = first.substring("started ".length()).trim();
    }

    /** What the child wrote on stderr so far. */
    String childErr() throws IOException {
        return Files.readString(tmp.resolve("child.err"));
    }

    /** The count of profiles of {@code type} the server holds for the test service. */
    long profiles(String type) throws Exception {
        String u = url + "/api/v1/profile?service=" + EndToEndTest.SERVICE + "&type=" + type;
        return ((Number) EndToEndTest.obj(t.call("GET", u, null).body()).get("profiles")).longValue();
    }

    /** Closes the child's stdin (E2eChild then returns from main) and waits for its exit,
     *  at most {@code seconds}; asserts exit 0. Returns the rest of its stdout. */
    String endChild(double seconds) throws Exception {
        child.getOutputStream().close();
        assertTrue(child.waitFor((long) (seconds * 1000), TimeUnit.MILLISECONDS), "the child did not exit");
        assertEquals(0, child.exitValue(), childErr());
        return childOut.lines().collect(java.util.stream.Collectors.joining("\n"));
    }

    @Override
    public void close() throws InterruptedException {
        if (child != null) {
            child.destroyForcibly();
        }
        stop(server);
    }

    private static void stop(Process server) throws InterruptedException {
        server.destroy();
        if (!server.waitFor(10, TimeUnit.SECONDS)) {
            server.destroyForcibly();
        }
    }
}
