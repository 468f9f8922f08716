// NameRules: the string rules of the wall sampler's names (Sampler) without a regex: which
// thread names are the VM's own, and a hidden class's address and a lambda proxy's counter
// dropped from a class name (DESIGN.md §3: frames are stable `Class.method` names).
package dev.roottrace;

/**
 * Each rule says what a regex said before (the tests keep the regex as the oracle), in plain
 * string tests. The sampler runs these on every sample, inside the application's process:
 * a regex here ran the JDK's matcher code, which the application's own regexes share, with
 * the SDK's patterns, and made the application's matching slower for the rest of its run
 * (bench/sdk_overhead's java-light: +1.8 % of the workload's CPU in its own threads, ~0 without
 * the regexes; docs/performance-sdk-java.md, *Java: where the wall sampler's cost was*).
 */
final class NameRules {
    private NameRules() {
    }

    private static final String LAMBDA = "$$Lambda";

    /** JIT compiler, GC and other VM threads, should a JVM make them visible: exactly the
     *  names {@code ^(C[12] CompilerThread\d+|JVMCI.*CompilerThread\d+|Sweeper thread|
     *  GC Thread#\d+|G1 .*|VM Thread|VM Periodic Task Thread|Shenandoah.*|ZGC.*|
     *  Z[A-Z][a-z]+.*Thread.*)$} matches, for names without a line terminator (the regex's
     *  {@code .} stopped at one; such a name here is judged by its characters alone). */
    static boolean isVmThreadName(String n) {
        switch (n) {
            case "Sweeper thread":
            case "VM Thread":
            case "VM Periodic Task Thread":
                return true;
            default:
                break;
        }
        if (n.startsWith("G1 ") || n.startsWith("Shenandoah") || n.startsWith("ZGC")) {
            return true;
        }
        if (n.startsWith("C1 CompilerThread") || n.startsWith("C2 CompilerThread")) {
            return digitsFrom(n, "C1 CompilerThread".length(), n.length());
        }
        if (n.startsWith("GC Thread#")) {
            return digitsFrom(n, "GC Thread#".length(), n.length());
        }
        if (n.startsWith("JVMCI")) {
            int at = n.lastIndexOf("CompilerThread");
            return at >= "JVMCI".length()
                    && digitsFrom(n, at + "CompilerThread".length(), n.length());
        }
        return n.length() > 2 && n.charAt(0) == 'Z' && n.charAt(1) >= 'A' && n.charAt(1) <= 'Z'
                && n.charAt(2) >= 'a' && n.charAt(2) <= 'z' && n.indexOf("Thread", 3) >= 0;
    }

    /** {@code cls} without a hidden class's address suffix: the first (leftmost) match of
     *  {@code [/+.]0x[0-9a-fA-F]+(\.[0-9]+)?$} removed (`Foo$$Lambda/0x0000000801001200`; in
     *  JFR `Foo$$Lambda+0x00007f80880ee658.992190576` on JDK 17, `Foo$$Lambda.0x00000000110e2ce0`
     *  on 25: varies per run). */
    static String withoutHiddenSuffix(String cls) {
        for (int p = cls.indexOf("0x", 1); p >= 0; p = cls.indexOf("0x", p + 1)) {
            char c = cls.charAt(p - 1);
            if ((c == '/' || c == '+' || c == '.') && hexThenDigits(cls, p + 2)) {
                return cls.substring(0, p - 1);
            }
        }
        return cls;
    }

    /** {@code cls} with each {@code $$Lambda$<digits>} replaced by {@code $$Lambda}, left to
     *  right (JDK 17's lambda proxy counter, `Foo$$Lambda$14`: varies with class-loading
     *  order). */
    static String withoutLambdaCounter(String cls) {
        int j = cls.indexOf(LAMBDA + "$");
        if (j < 0) {
            return cls;
        }
        StringBuilder b = new StringBuilder(cls.length());
        int i = 0;
        for (; j >= 0; j = cls.indexOf(LAMBDA + "$", i)) {
            int k = j + LAMBDA.length() + 1;
            int end = k;
            while (end < cls.length() && cls.charAt(end) >= '0' && cls.charAt(end) <= '9') {
                end++;
            }
            if (end > k) {
                b.append(cls, i, j).append(LAMBDA);
                i = end;
            } else {
                b.append(cls, i, j + 1);
                i = j + 1;
            }
        }
        return b.append(cls, i, cls.length()).toString();
    }

    /** Whether {@code s} from {@code from} to its end is {@code [0-9a-fA-F]+(\.[0-9]+)?}. */
    private static boolean hexThenDigits(String s, int from) {
        int i = from;
        while (i < s.length() && (s.charAt(i) >= '0' && s.charAt(i) <= '9'
                || s.charAt(i) >= 'a' && s.charAt(i) <= 'f' || s.charAt(i) >= 'A' && s.charAt(i) <= 'F')) {
            i++;
        }
        if (i == from) {
            return false;
        }
        return i == s.length() || s.charAt(i) == '.' && digitsFrom(s, i + 1, s.length());
    }

    /** Whether {@code s[from, to)} is one or more ASCII digits. */
    private static boolean digitsFrom(String s, int from, int to) {
        if (from >= to) {
            return false;
        }
        for (int i = from; i < to; i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }
}
