// The child JVM of JfrDeoptTest: gets a method compiled by the JIT, then starts JFR the way a
// cpu profile does (JfrSampler.start), between two markers on stdout. Run with
// -XX:+PrintCompilation, its stdout says whether JFR's start threw the compiled method away
// ("made not entrant"). Tests only.
package dev.roottrace;

import java.util.Collections;

public final class DeoptChild {
    static final String BEFORE = "roottrace-test: starting JFR";
    static final String AFTER = "roottrace-test: JFR started";
    static volatile long sink; // keeps the loop's result alive

    /** Arithmetic only: nothing JFR redefines is inlined into it. */
    static long spin(long x) {
        for (int i = 0; i < 1000; i++) {
            x = (x * 1103515245L + 12345 + i) & 0x7FFFFFFF;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        long x = 1;
        long end = System.nanoTime() + 3_000_000_000L; // C2 compiles spin within ~0.1 s, quiet
        while (System.nanoTime() < end) {
            x = spin(x);
        }
        sink = x;
        System.out.println(BEFORE);
        System.out.flush();
        JfrSampler jfr = new JfrSampler(Collections.emptySet(), () -> -1L);
        jfr.start(20_000_000L);
        Thread.sleep(200);
        jfr.close();
        System.out.println(AFTER);
        System.out.flush();
    }
}
