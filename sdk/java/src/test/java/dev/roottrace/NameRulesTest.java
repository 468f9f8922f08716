package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** NameRules' string tests say what the regexes they replaced said: the regexes are the
 *  oracles, on the JVMs' own names, near misses, and every string of up to four pieces drawn
 *  from those names' parts (no line terminators: the regexes' {@code .} and {@code $} treat
 *  them apart, and neither a class name nor the VM's thread names hold one). */
class NameRulesTest {
    static final Pattern VM_THREAD = Pattern.compile(
            "^(C[12] CompilerThread\\d+|JVMCI.*CompilerThread\\d+|Sweeper thread|"
                    + "GC Thread#\\d+|G1 .*|VM Thread|VM Periodic Task Thread|"
                    + "Shenandoah.*|ZGC.*|Z[A-Z][a-z]+.*Thread.*)$");
    static final Pattern HIDDEN_SUFFIX = Pattern.compile("[/+.]0x[0-9a-fA-F]+(\\.[0-9]+)?$");
    static final Pattern LAMBDA_COUNTER = Pattern.compile("\\$\\$Lambda\\$\\d+");

    /** Every concatenation of 1 to 4 of {@code parts}. */
    static List<String> combinations(String[] parts) {
        List<String> out = new ArrayList<>();
        int[] idx = new int[4];
        for (int len = 1; len <= 4; len++) {
            java.util.Arrays.fill(idx, 0);
            while (true) {
                StringBuilder b = new StringBuilder();
                for (int i = 0; i < len; i++) {
                    b.append(parts[idx[i]]);
                }
                out.add(b.toString());
                int i = len - 1;
                while (i >= 0 && ++idx[i] == parts.length) {
                    idx[i--] = 0;
                }
                if (i < 0) {
                    break;
                }
            }
        }
        return out;
    }

    @Test
    void vmThreadNames() {
        List<String> names = new ArrayList<>(List.of("C1 CompilerThread0", "C2 CompilerThread12",
                "C3 CompilerThread0", "C1 CompilerThread", "C1 CompilerThread0x",
                "JVMCI CompilerThread0", "JVMCI-native CompilerThread3", "JVMCICompilerThread1",
                "JVMCompilerThread1", "JVMCI CompilerThread", "Sweeper thread", "GC Thread#0",
                "GC Thread#", "GC Thread#1a", "G1 Conc#0", "G1 Main Marker", "G1", "VM Thread",
                "VM Periodic Task Thread", "Shenandoah GC", "ZGC", "ZDirector", "ZWorkerThread",
                "ZStat", "ZUnmapperThread", "ZaThread", "ZAaThread", "Zab", "", "main",
                "compute-0", "VM Thread ", "\u0663", "GC Thread#\u0663"));
        String[] parts = {"C1 ", "C2 ", "Compiler", "Thread", "#", "0", "12", "JVMCI", "G1 ",
            "Z", "Zx", "ZA", "a", "GC ", "Shenandoah", "ZGC", "VM ", "x", " "};
        names.addAll(combinations(parts));
        assertEquals(34 + 19 + 19 * 19 + 19 * 19 * 19 + 19 * 19 * 19 * 19, names.size());
        for (String n : names) {
            assertEquals(VM_THREAD.matcher(n).matches(), NameRules.isVmThreadName(n), n);
        }
    }

    @Test
    void hiddenSuffixAndLambdaCounter() {
        List<String> names = new ArrayList<>(List.of("Foo$$Lambda/0x0000000801001200",
                "Foo$$Lambda+0x00007f80880ee658.992190576", "Foo$$Lambda.0x00000000110e2ce0",
                "Foo$$Lambda$14/0x0000000800c0b200", "Foo$$Lambda$14", "a.0x1.0x2", "0xA.0x1",
                "Foo/0x", "Foo/0xg", "Foo/0x1.", "Foo/0x1.2a", "Foo/0x1/0x2", "$$Lambda$",
                "$$Lambda$$$Lambda$1", "$$Lambda$1$$Lambda$22x", "x$$Lambda$\u0663",
                "Foo/0xDEADBEEF", "Foo/0xdeadbeef.12", "Foo/0xFf.0", "com.example.Main", ""));
        String[] parts = {"Foo", "$$Lambda", "$", "14", "/", "+", ".", "0x", "0", "ab", "G",
            "x", "7."};
        names.addAll(combinations(parts));
        for (String n : names) {
            assertEquals(HIDDEN_SUFFIX.matcher(n).replaceFirst(""),
                    NameRules.withoutHiddenSuffix(n), n);
            assertEquals(LAMBDA_COUNTER.matcher(n).replaceAll("\\$\\$Lambda"),
                    NameRules.withoutLambdaCounter(n), n);
        }
        assertEquals("Foo$$Lambda", Sampler.frameName("Foo$$Lambda$14/0x0000000800c0b200", "run")
                .replace(".run", ""));
    }

    @Test
    void hex4IsFormatsZeroPaddedHex() {
        int[] edges = {Integer.MIN_VALUE, -1, 0x10000, 0x7fffffff, 0x123456};
        for (int v = 0; v < 0x10000; v++) {
            assertEquals(String.format("%04x", v), Names.hex4(v));
        }
        for (int v : edges) {
            assertEquals(String.format("%04x", v), Names.hex4(v));
        }
        assertEquals("control character U+001F", Names.problem("a\u001fb"));
        assertEquals("\"a\\u0007\"", Status.quote("a\u0007"));
    }
}
