// The Go SDK's compiled bounds against the one table every SDK is checked against
// (sdk/testdata/limits.json, DESIGN §5): a bound changed here and not there, or there and not
// here, fails this test.

package roottrace

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

func TestLimitsTable(t *testing.T) {
	raw, err := os.ReadFile("../testdata/limits.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Shared map[string]float64 `json:"shared"`
		Floor  map[string]float64 `json:"sampling_interval_min_us"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	l := defaultLimits()
	got := map[string]float64{
		"sampling_interval_max_us": float64(l.samplingIntervalMaxUS),
		"upload_interval_min_s":    l.uploadIntervalMin.Seconds(),
		"upload_interval_max_s":    l.uploadIntervalMax.Seconds(),
		"stack_depth_min":          float64(l.stackDepthMin),
		"stack_depth_max":          float64(l.stackDepthMax),
		"poll_interval_min_s":      l.pollIntervalMin.Seconds(),
		"poll_interval_max_s":      l.pollIntervalMax.Seconds(),
		"upload_max_bytes":         float64(l.uploadMaxBytes),
		"flush_timeout_s":          l.flushTimeout.Seconds(),
	}
	if !reflect.DeepEqual(got, table.Shared) {
		t.Errorf("compiled bounds %v, limits.json %v", got, table.Shared)
	}
	if float64(l.samplingIntervalMinUS) != table.Floor["go"] {
		t.Errorf("sampling floor %d us, limits.json %v", l.samplingIntervalMinUS, table.Floor["go"])
	}
}
