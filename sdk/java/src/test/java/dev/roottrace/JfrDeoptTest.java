// JFR's first start in a JVM must not throw away the application's compiled code (issue #20,
// docs/sdk/java.md, "JFR and the JIT"). On JDK 17 the first class JFR redefines makes HotSpot
// deoptimize every compiled method, unless an agent held the redefine capability from the
// JVM's start: the agent jar's manifest asks for it (Can-Redefine-Classes). Each case runs
// DeoptChild in a child JVM with -XX:+PrintCompilation and reads what JFR's start made not
// entrant.
package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JfrDeoptTest {
    static final String SPIN = "dev.roottrace.DeoptChild::spin";

    /** The child's PrintCompilation lines between the two markers, and whether C2 had
     *  compiled spin (tier 4) before JFR started. */
    static final class Run {
        boolean spinCompiled;
        final List<String> during = new ArrayList<>();
    }

    /** The tier of a PrintCompilation line about spin ("   2819 1256  %  4   NAME ..."): the
     *  field before the name; -1 for a line about another method. */
    static int spinTier(String line) {
        String[] f = line.trim().split("\\s+");
        for (int i = 1; i < f.length; i++) {
            if (f[i].equals(SPIN)) {
                return f[i - 1].matches("[0-4]") ? Integer.parseInt(f[i - 1]) : -1;
            }
        }
        return -1;
    }

    static Run run(String... jvmArgs) throws Exception {
        String javaBin = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(javaBin, "-XX:+PrintCompilation"));
        cmd.addAll(Arrays.asList(jvmArgs));
        Path target = Paths.get(System.getProperty("user.dir"), "target");
        cmd.addAll(List.of("-cp", target.resolve("test-classes") + java.io.File.pathSeparator
                + target.resolve("classes"), "dev.roottrace.DeoptChild"));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        Run r = new Run();
        int phase = 0; // 0 before the first marker, 1 between them, 2 after
        for (String line : out.split("\n")) {
            // The JIT's threads write to the same stdout: a marker can share its line.
            if (line.contains(DeoptChild.BEFORE)) {
                phase = 1;
            } else if (line.contains(DeoptChild.AFTER)) {
                phase = 2;
            } else if (phase == 0 && spinTier(line) == 4 && !line.contains("made not entrant")) {
                r.spinCompiled = true;
            } else if (phase == 1) {
                r.during.add(line);
            }
        }
        assertEquals(2, phase, out);
        assertTrue(r.spinCompiled, "C2 had not compiled spin when JFR started:\n" + out);
        return r;
    }

    /** Whether JFR's start made spin's C2 code not entrant. (Its C1 code being replaced by
     *  C2's is not a deoptimization, only a compilation that finished late.) */
    static boolean spinThrownAway(Run r) {
        return r.during.stream().anyMatch(l -> spinTier(l) == 4 && l.contains("made not entrant"));
    }

    @Test
    void theAgentJarAsksForTheRedefineCapability(@TempDir Path tmp) throws Exception {
        try (JarFile jar = new JarFile(EndToEndTest.agentJar(tmp).toFile())) {
            assertEquals("true", jar.getManifest().getMainAttributes().getValue("Can-Redefine-Classes"));
        }
    }

    @Test
    void jfrStartKeepsCompiledCodeUnderTheAgent(@TempDir Path tmp) throws Exception {
        // No arguments: the agent starts nothing (one line on stderr), but the JVM has given
        // its JVMTI environment the capability at load, which is all this needs.
        Run withAgent = run("-javaagent:" + EndToEndTest.agentJar(tmp));
        assertTrue(!spinThrownAway(withAgent), "JFR's start deoptimized spin under the agent:\n"
                + String.join("\n", withAgent.during));
        Run without = run();
        if (Runtime.version().feature() == 17) {
            // The control: without the capability JDK 17 deoptimizes everything, so the
            // check above can fail. (JDK 25 no longer does; the docs say which JDKs do.)
            assertTrue(spinThrownAway(without), "JDK 17 without the agent kept spin:\n"
                    + String.join("\n", without.during));
        }
    }
}
