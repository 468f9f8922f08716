// Agent argument parsing and option validation: lenient where it can be, never throwing,
// and a bad argument starts nothing.
package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OptionsTest {
    @Test
    void parsesTheDocumentedForm() {
        Options o = Options.parseAgentArgs("service=checkout,server=http://h:4318/rt,key=rt_abc,version=1.2,instance=i-1");
        assertEquals("checkout", o.service);
        assertEquals("http://h:4318/rt", o.server);
        assertEquals("rt_abc", o.key);
        assertEquals("1.2", o.version);
        assertEquals("i-1", o.instance);
        assertNull(o.problem);
    }

    @Test
    void lenientAboutBlanksCaseQuotesAndEmptyItems() {
        Options o = Options.parseAgentArgs(" Service = checkout ,, SERVER='http://h:1' ,key=\"a=b\",");
        assertEquals("checkout", o.service);
        assertEquals("http://h:1", o.server);
        assertEquals("a=b", o.key);
        assertNull(o.problem);
        assertNull(Options.parseAgentArgs(null).problem);
    }

    @ParameterizedTest
    @ValueSource(strings = {"service", "service=a,bogus=1", "service=a,service=b", "=x", "service=a,key"})
    void unreadableArgumentsStartNothing(String args) {
        Options o = Options.parseAgentArgs(args);
        assertTrue(o.problem != null, args);
        Agent a = new Agent(o, Limits.DEFAULT, Map::of);
        a.start();
        assertTrue(a.status().status().startsWith("error: "), a.status().status());
        assertTrue(java.util.regex.Pattern.matches(StatusText.GRAMMAR, a.status().status()));
        assertTrue(a.threads.isEmpty());
    }

    @Test
    void missingAndInvalidOptionsAreReportedNotThrown() {
        String[][] cases = {
            {null, "k", "svc", "error: missing option: server"},
            {"ftp://h", "k", "svc", "error: server must be an http:// or https:// URL"},
            {"http://h:1", "k", "a/b", "error: invalid service name (contains '/')"},
            {"http://h:1", "k", "", "error: invalid service name (empty)"},
        };
        for (String[] c : cases) {
            Options o = new Options().server(c[0]).key(c[1]).service(c[2]);
            Agent a = new Agent(o, Limits.DEFAULT, Map::of);
            a.start();
            if (c[0] == null && System.getenv("ROOTTRACE_SERVER") != null) {
                continue;
            }
            assertEquals(c[3], a.status().status());
            assertTrue(a.threads.isEmpty());
        }
    }

    @Test
    void premainNeverThrows() {
        AgentMain.premain("garbage,,=");
        AgentMain.premain(null);
        assertTrue(RootTrace.status().status().startsWith("error: "), RootTrace.status().status());
    }

    @Test
    void instanceIdShape() {
        String id = Agent.makeInstanceId();
        assertTrue(id.matches(".+-" + ProcessHandle.current().pid() + "-[0-9a-f]{4}"), id);
        assertNull(Names.problem(id));
    }
}
