// The Java SDK's compiled bounds against the one table every SDK is checked against
// (sdk/testdata/limits.json, DESIGN §5): a bound changed here and not there, or there and not
// here, fails this test.
package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class LimitsTableTest {
    @Test
    @SuppressWarnings("unchecked")
    void compiledBoundsAreTheSharedTable() throws Exception {
        Map<String, Object> table = (Map<String, Object>) Json.parse(
                Files.readAllBytes(Path.of("..", "testdata", "limits.json")));
        Map<String, Double> want = new LinkedHashMap<>();
        ((Map<String, Object>) table.get("shared"))
                .forEach((k, v) -> want.put(k, ((Number) v).doubleValue()));
        Limits l = Limits.DEFAULT;
        Map<String, Double> got = new LinkedHashMap<>();
        got.put("sampling_interval_max_us", (double) l.samplingIntervalMaxUs);
        got.put("upload_interval_min_s", l.uploadIntervalMinS);
        got.put("upload_interval_max_s", l.uploadIntervalMaxS);
        got.put("stack_depth_min", (double) l.stackDepthMin);
        got.put("stack_depth_max", (double) l.stackDepthMax);
        got.put("poll_interval_min_s", l.pollIntervalMinS);
        got.put("poll_interval_max_s", l.pollIntervalMaxS);
        got.put("upload_max_bytes", (double) l.uploadMaxBytes);
        got.put("flush_timeout_s", l.flushTimeoutS);
        assertEquals(want, got);
        Map<String, Object> floor = (Map<String, Object>) table.get("sampling_interval_min_us");
        assertEquals(((Number) floor.get("java")).longValue(), l.samplingIntervalMinUs);
    }
}
