// AgentMain: the java agent entry points (-javaagent:roottrace-agent.jar=ARGS and dynamic
// attach). They never throw: a bad argument logs one line to stderr and starts nothing.
package dev.roottrace;

/** Java agent entry points; see {@link Options#parseAgentArgs(String)} for the arguments. */
public final class AgentMain {
    private AgentMain() {
    }

    /**
     * Called by the JVM before main() for {@code -javaagent:roottrace-agent.jar=ARGS}.
     *
     * @param args {@code service=NAME,server=URL,key=KEY[,version=V][,instance=I]}; server
     *     and key may come from ROOTTRACE_SERVER and ROOTTRACE_KEY instead
     */
    public static void premain(String args) {
        launch(args);
    }

    /** Called when the agent is attached to a running JVM; same arguments as premain. */
    public static void agentmain(String args) {
        launch(args);
    }

    static void launch(String args) {
        try {
            Agent a = RootTrace.start(Options.parseAgentArgs(args), Limits.DEFAULT);
            if (a != null && a.fatal != null) {
                System.err.println("roottrace: agent not started: " + a.fatal);
            }
        } catch (Throwable e) { // the application starts whatever happens here
            try {
                System.err.println("roottrace: agent not started: " + e);
            } catch (Throwable ignored) {
                // stderr closed
            }
        }
    }
}
