// Status: the fields every SDK's status has (docs/sdk/README.md, "One vocabulary"), reason()
// split from the status string, toString() the status string and toJson() every field.
package dev.roottrace;

import static dev.roottrace.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class StatusTest {
    private static Status of(String status) {
        return new Status(status, 50_000, "svc", "inst-1", 3, 1, 2, 40, 12.5,
                "upload answered 503");
    }

    @Test
    void reasonIsThePartAfterTheState() {
        Status s = of("profiling: cpu not supported, sending wall");
        assertEquals("profiling", s.state());
        assertEquals("cpu not supported, sending wall", s.reason());
        Status e = of("error: invalid config: malformed JSON: x: y");
        assertEquals("error", e.state());
        assertEquals("invalid config: malformed JSON: x: y", e.reason());
    }

    @Test
    void reasonIsEmptyWithoutOne() {
        for (String st : new String[] {"profiling", "disabled", "waiting"}) {
            assertEquals(st, of(st).state());
            assertEquals("", of(st).reason());
        }
    }

    @Test
    void reasonOfAnAgentNotStartedAndOfBadOptions() {
        Agent idle = new Agent(new Options().server("http://127.0.0.1:9").key("k").service("svc"),
                Limits.DEFAULT, Map::of);
        assertEquals("disabled: not started", idle.status().status());
        assertEquals("not started", idle.status().reason());
        Agent bad = new Agent(new Options().server("http://127.0.0.1:9").key("k").service("a/b"),
                Limits.DEFAULT, Map::of);
        bad.start();
        assertEquals("error", bad.status().state());
        assertEquals("invalid service name (contains '/')", bad.status().reason());
        assertEquals("error: invalid service name (contains '/')", bad.status().lastError());
        assertEquals(null, idle.status().lastError());
    }

    @Test
    void reasonFollowsTheControlPlane() throws Exception {
        try (TestSupport ts = new TestSupport()) {
            ts.fake.setConfig("enabled", false, "poll_interval_s", 1);
            Agent a = ts.agent();
            assertTrue(waitFor(() -> a.status().status().equals("disabled"), 3),
                    a.status().toJson());
            assertEquals("", a.status().reason());
            ts.fake.setConfig("enabled", true, "type", "heap");
            assertTrue(waitFor(() -> a.status().state().equals("profiling"), 3),
                    a.status().toJson());
            assertEquals("heap not supported, sending wall", a.status().reason());
            a.stop(2);
            assertEquals("disabled: stopped", a.status().toString());
            assertEquals("stopped", a.status().reason());
        }
    }

    @Test
    void toStringIsTheStatusString() {
        assertEquals("waiting: no config yet", of("waiting: no config yet").toString());
        assertEquals("disabled", of("disabled").toString());
    }

    @Test
    void toJsonHasTheSharedFieldsInOrder() {
        assertEquals("{\"status\":\"disabled: stopped\",\"state\":\"disabled\","
                + "\"reason\":\"stopped\",\"interval_us\":50000,\"service\":\"svc\","
                + "\"instance\":\"inst-1\",\"profiles_sent\":3,\"profiles_dropped\":1,"
                + "\"profiles_queued\":2,\"samples\":40,"
                + "\"last_error\":\"upload answered 503\",\"median_walk_us\":12.5}",
                of("disabled: stopped").toJson());
        assertEquals("{\"status\":\"profiling\",\"state\":\"profiling\",\"reason\":\"\","
                + "\"interval_us\":50000,\"service\":null,\"instance\":null,\"profiles_sent\":0,"
                + "\"profiles_dropped\":0,\"profiles_queued\":0,\"samples\":0,"
                + "\"last_error\":null,\"median_walk_us\":0.0}",
                new Status("profiling", 50_000, null, null, 0, 0, 0, 0, 0, null).toJson());
    }
}
