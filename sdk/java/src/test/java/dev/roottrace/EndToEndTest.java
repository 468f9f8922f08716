// End to end against the real server binary: an ingest key, profiling turned on from the
// API, a child JVM running the built agent (-javaagent), the wall profile it uploads, and
// the toggle turning it off. Modeled on sdk/python tests/test_e2e.py.
package dev.roottrace;

import static dev.roottrace.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EndToEndTest {
    static final String ADMIN = "e2e-admin-token-0123456789";
    static final String SERVICE = "e2e-java";
    static final String BUSY = "dev.roottrace.E2eChild.busyComputeChecksum";
    static final String SLEEPY = "dev.roottrace.E2eChild.sleepyWaitForIo";
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    static Path repo() {
        String r = System.getenv("ROOTTRACE_REPO");
        return (r != null ? Paths.get(r) : Paths.get(System.getProperty("user.dir"), "..", "..")).normalize();
    }

    static Path serverBinary() {
        String b = System.getenv("ROOTTRACE_BIN");
        Path bin = b != null && !b.isEmpty() ? Paths.get(b) : repo().resolve("build/roottrace");
        if (!Files.isExecutable(bin)) {
            String msg = "no server binary at " + bin + " (run make -C " + repo() + ")";
            if ("1".equals(System.getenv("ROOTTRACE_E2E_REQUIRED"))) {
                fail(msg);
            }
            Assumptions.abort(msg);
        }
        return bin;
    }

    /** The agent jar: target/roottrace-agent.jar when built, else one made from the
     *  compiled classes with the same manifest entries. */
    static Path agentJar(Path tmp) throws IOException {
        Path built = Paths.get(System.getProperty("user.dir"), "target", "roottrace-agent.jar");
        Path classes = Paths.get(System.getProperty("user.dir"), "target", "classes");
        if (Files.exists(built) && Files.getLastModifiedTime(built).compareTo(
                Files.getLastModifiedTime(classes.resolve("dev/roottrace/Agent.class"))) >= 0) {
            return built;
        }
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        m.getMainAttributes().putValue("Premain-Class", "dev.roottrace.AgentMain");
        m.getMainAttributes().putValue("Agent-Class", "dev.roottrace.AgentMain");
        m.getMainAttributes().putValue("Can-Redefine-Classes", "true");
        Path jar = tmp.resolve("roottrace-agent.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), m);
                Stream<Path> files = Files.walk(classes)) {
            for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
                out.write(Files.readAllBytes(f));
                out.closeEntry();
            }
        }
        return jar;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    HttpResponse<String> call(String method, String url, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                .header("Authorization", "Bearer " + ADMIN).header("Content-Type", "application/json");
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(String json) throws Exception {
        return (Map<String, Object>) Json.parse(json);
    }

    /** This service's instance in GET /api/v1/services, or null. */
    @SuppressWarnings("unchecked")
    Map<String, Object> instance(String url, String name) throws Exception {
        for (Object s : (List<Object>) Json.parse(call("GET", url + "/api/v1/services", null).body())) {
            Map<String, Object> svc = (Map<String, Object>) s;
            if (SERVICE.equals(svc.get("name"))) {
                for (Object i : (List<Object>) svc.get("instances")) {
                    if (name.equals(((Map<String, Object>) i).get("instance"))) {
                        return (Map<String, Object>) i;
                    }
                }
            }
        }
        return null;
    }

    @Test
    @SuppressWarnings("unchecked")
    void agentProfilesAChildJvmAndTheToggleStopsIt(@TempDir Path tmp) throws Exception {
        try (E2eServer s = E2eServer.start(this, tmp, "{\"enabled\":true,\"upload_interval_s\":10}")) {
            s.startChild("version=1.2.3");
            String url = s.url;
            String inst = s.instance;

            // An upload arrives (upload interval clamped at 10 s) with the busy frame in it.
            String profileUrl = url + "/api/v1/profile?service=" + SERVICE + "&type=wall";
            Map<String, Object>[] prof = new Map[1];
            assertTrue(waitFor(() -> {
                try {
                    prof[0] = obj(call("GET", profileUrl, null).body());
                    return ((Number) prof[0].get("profiles")).longValue() >= 1;
                } catch (Exception e) {
                    return false;
                }
            }, 25), "no profile: " + prof[0] + " child: " + s.childErr());
            assertEquals("wall", prof[0].get("type"));
            List<String> names = new ArrayList<>();
            for (Object f : (List<Object>) prof[0].get("functions")) {
                names.add((String) ((Map<String, Object>) f).get("name"));
            }
            assertTrue(names.contains(BUSY), names.toString());
            assertTrue(names.contains(SLEEPY), names.toString());
            for (String n : names) {
                assertFalse(n.startsWith("java.lang.ref.Reference") || n.startsWith("java.lang.ref.Finalizer"), n);
                assertFalse(n.startsWith("dev.roottrace.") && !n.startsWith("dev.roottrace.E2eChild"), n);
                assertFalse(n.startsWith("jdk.internal.net.http."), n); // the SDK's HTTP threads
            }
            assertEquals(Json.NULL, prof[0].get("capacity")); // wall: no vCPU-hours
            Map<String, Object> i = instance(url, inst);
            assertEquals("java", i.get("runtime"));
            assertEquals("0.1.0", i.get("sdk_version"));
            assertEquals("profiling", i.get("status"));

            // Toggle off: the SDK says disabled and uploads nothing more.
            s.toggle("{\"enabled\":false}");
            assertTrue(waitFor(() -> {
                try {
                    return "disabled".equals(instance(url, inst).get("status"));
                } catch (Exception e) {
                    return false;
                }
            }, 6), "status: " + instance(url, inst));
            long n0 = s.profiles("wall");
            TestSupport.sleep(2.5);
            assertEquals(n0, s.profiles("wall"));

            // stdin closed: the child exits, its shutdown hook within the 5 s flush bound.
            long t0 = System.nanoTime();
            String out = s.endChild(8);
            assertTrue(TestSupport.since(t0) < 6.5);
            assertTrue(out.contains("\"profiles_sent\":") && out.contains("\"profiles_dropped\":0"), out);
            System.out.println("e2e: " + names.size() + " functions; " + out.trim());
        }
    }

    /** CPU from JFR (issue #20): the toggle asks for cpu, the child JVM's busy thread ranks
     *  first, the sleeping one is absent (JFR samples threads running Java code), and the
     *  answer carries vCPU-hours from the sampled threads' CPU and the producer's note. */
    @Test
    @SuppressWarnings("unchecked")
    void cpuFromJfrRanksTheBusyThreadFirstWithCapacity(@TempDir Path tmp) throws Exception {
        try (E2eServer s = E2eServer.start(this, tmp,
                "{\"enabled\":true,\"type\":\"cpu\",\"upload_interval_s\":10}")) {
            s.startChild("");
            String url = s.url;

            // two 10 s profiles: the first holds JFR's start-up in the child
            String profileUrl = url + "/api/v1/profile?service=" + SERVICE + "&type=cpu";
            Map<String, Object>[] prof = new Map[1];
            assertTrue(waitFor(() -> {
                try {
                    prof[0] = obj(call("GET", profileUrl, null).body());
                    return ((Number) prof[0].get("profiles")).longValue() >= 2;
                } catch (Exception e) {
                    return false;
                }
            }, 40), "no profiles: " + prof[0] + " child: " + s.childErr());
            assertEquals("cpu", prof[0].get("type"));
            List<Object> fns = (List<Object>) prof[0].get("functions");
            Map<String, Object> top = (Map<String, Object>) fns.get(0);
            assertEquals(BUSY, top.get("name"), fns.toString());
            double share = ((Number) top.get("self_share")).doubleValue();
            assertTrue(share > 50, fns.toString());
            for (Object f : fns) {
                String n = (String) ((Map<String, Object>) f).get("name");
                // a sleeping thread runs Java code only for the moments it wakes (JDK 25's
                // Thread.sleep runs more of it than 17's): a sample now and then, no more
                double self = ((Number) ((Map<String, Object>) f).get("self_share")).doubleValue();
                assertFalse(n.equals(SLEEPY) && self > 2, n + " " + self + " %");
                assertFalse(n.startsWith("dev.roottrace.") && !n.startsWith("dev.roottrace.E2eChild"), n);
            }
            Map<String, Object> cap = (Map<String, Object>) prof[0].get("capacity");
            assertTrue(cap != null && !Json.NULL.equals(cap), String.valueOf(prof[0].get("capacity_unavailable")));
            Map<String, Object> inputs = (Map<String, Object>) cap.get("inputs");
            assertEquals("os", inputs.get("cpu_basis"), inputs.toString());
            Map<String, Object> agree = (Map<String, Object>) prof[0].get("cpu_agreement");
            assertEquals("threads running Java code (JFR)", agree.get("scope"), agree.toString());
            String producers = String.valueOf(prof[0].get("producers"));
            assertTrue(producers.contains("roottrace-java") && producers.contains("GC and JIT threads are not seen"),
                    producers);
            assertEquals("profiling", instance(url, s.instance).get("status"));
            System.out.println("e2e cpu: " + BUSY + " " + share + " %; capacity " + cap.get("vcpu_hours_per_month")
                    + " vCPU-h/month; agreement " + agree);
            s.endChild(10);
        }
    }

    /** A JVM that exits in cpu mode (issue #20, docs/sdk/java-jfr-exit.md): JFR's own
     *  shutdown hook writes the recording in progress to the SDK's file (dump on exit), the
     *  SDK's hook waits for it and uploads it, and JFR prints nothing on the application's
     *  output. Before, JFR's hook removed its repository under the SDK's dump: two
     *  "[error][jfr] Missing chunkfile" lines and the profile lost, 3 runs of 3. With a 60 s
     *  upload interval, the one cpu profile is the one sent at exit. */
    @Test
    @SuppressWarnings("unchecked")
    void theCpuProfileInProgressIsSentAtExitWithoutJfrErrors(@TempDir Path tmp) throws Exception {
        try (E2eServer s = E2eServer.start(this, tmp,
                "{\"enabled\":true,\"type\":\"cpu\",\"upload_interval_s\":60}")) {
            Path childTmp = Files.createDirectories(tmp.resolve("child-tmp"));
            s.startChild("", "-Djava.io.tmpdir=" + childTmp);
            assertTrue(waitFor(() -> {
                try {
                    return "profiling".equals(instance(s.url, s.instance).get("status"));
                } catch (Exception e) {
                    return false;
                }
            }, 10), "status: " + instance(s.url, s.instance));
            TestSupport.sleep(3); // JFR starts, the busy thread is sampled
            assertEquals(0L, s.profiles("cpu"));
            String out = s.endChild(10);
            String err = s.childErr();
            assertFalse(out.contains("[jfr]") || err.contains("[jfr]"), out + "\n" + err);
            String profileUrl = s.url + "/api/v1/profile?service=" + SERVICE + "&type=cpu";
            Map<String, Object>[] prof = new Map[1];
            assertTrue(waitFor(() -> {
                try {
                    prof[0] = obj(call("GET", profileUrl, null).body());
                    return ((Number) prof[0].get("profiles")).longValue() >= 1;
                } catch (Exception e) {
                    return false;
                }
            }, 5), "no cpu profile from the exit: " + prof[0] + "\n" + out + "\n" + err);
            assertEquals(1L, ((Number) prof[0].get("profiles")).longValue());
            List<Object> fns = (List<Object>) prof[0].get("functions");
            assertEquals(BUSY, ((Map<String, Object>) fns.get(0)).get("name"), fns.toString());
            try (Stream<Path> left = Files.list(childTmp)) { // the SDK's temporary files
                List<String> names = left.map(f -> f.getFileName().toString())
                        .filter(n -> n.startsWith("roottrace-")).collect(java.util.stream.Collectors.toList());
                assertTrue(names.isEmpty(), names.toString());
            }
        }
    }

    /** A JVM without the jdk.jfr module (a jlink image; here --limit-modules): the toggle
     *  asks for cpu, the SDK sends wall profiles and its status says why (issue #20). */
    @Test
    @SuppressWarnings("unchecked")
    void withoutJdkJfrTheChildSendsWallAndSaysWhy(@TempDir Path tmp) throws Exception {
        try (E2eServer s = E2eServer.start(this, tmp,
                "{\"enabled\":true,\"type\":\"cpu\",\"upload_interval_s\":10}")) {
            s.startChild("", "--limit-modules",
                    "java.base,java.instrument,java.management,java.net.http,jdk.management");
            String want = "profiling: wall (JFR unavailable: no jdk.jfr module (NoClassDefFoundError))";
            assertTrue(waitFor(() -> {
                try {
                    return want.equals(instance(s.url, s.instance).get("status"));
                } catch (Exception e) {
                    return false;
                }
            }, 10), "status: " + instance(s.url, s.instance));
            assertTrue(waitFor(() -> {
                try {
                    return s.profiles("wall") >= 1;
                } catch (Exception e) {
                    return false;
                }
            }, 25), "no wall profile; child: " + s.childErr());
            assertEquals(0L, s.profiles("cpu"));
            s.endChild(10);
        }
    }

    @Test
    void badAgentArgumentsNeverStopTheApplication(@TempDir Path tmp) throws Exception {
        String javaBin = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(javaBin, "-javaagent:" + agentJar(tmp) + "=service=x,bogus",
                "-cp", Paths.get(System.getProperty("user.dir"), "target", "test-classes").toString(),
                "dev.roottrace.E2eChild").redirectError(tmp.resolve("err").toFile()).start();
        p.getOutputStream().close();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue());
        List<String> err = Files.readAllLines(tmp.resolve("err"));
        assertEquals(1, err.size(), err.toString());
        assertTrue(err.get(0).startsWith("roottrace: agent not started: error: agent argument without name=value: bogus"),
                err.get(0));
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(out.contains("final {\"status\":\"error: "), out);
    }
}
