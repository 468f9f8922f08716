// The application the end-to-end test runs under -javaagent: one busy thread, one sleeping
// thread, and a main thread that waits for its stdin to close. Tests only.
package dev.roottrace;

public final class E2eChild {
    static volatile long sink; // keeps the busy loop's result alive

    static void busyComputeChecksum() {
        long x = 0;
        while (true) {
            for (int i = 0; i < 20000; i++) {
                x = (x * 31 + i) % 1000003;
            }
            sink = x;
        }
    }

    static void sleepyWaitForIo() {
        while (true) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Thread busy = new Thread(E2eChild::busyComputeChecksum, "busy");
        busy.setDaemon(true);
        busy.start();
        Thread sleepy = new Thread(E2eChild::sleepyWaitForIo, "sleepy");
        sleepy.setDaemon(true);
        sleepy.start();
        System.out.println("started " + RootTrace.status().instance());
        System.out.flush();
        while (System.in.read() >= 0) {
            // until the test closes stdin
        }
        System.out.println("final " + RootTrace.status().toJson());
    }
}
