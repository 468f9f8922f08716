// Fuzzing the config parser (DESIGN §5): whatever the control plane sends, parseConfig
// returns either an error wrapping errConfig (profiling off) or a config whose every bound
// lies within the compiled clamps; profiling is on only for a valid JSON object whose
// "enabled" is true; the same input gives the same answer. `go test` replays the seeds and
// testdata/fuzz/FuzzParseConfig/; scripts/fuzz-sdk.sh runs `go test -fuzz` for longer.

package roottrace

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fuzzSeeds: the hostile-control-plane bodies, the clamp table's values and malformed
// bodies, as (body, ETag header) pairs.
func fuzzSeeds() [][2]string {
	base := `{"enabled": true, "type": "cpu", "sampling_interval_us": 10000, "upload_interval_s": 60, ` +
		`"max_stack_depth": 256, "poll_interval_s": 10, "etag": "e1"}`
	seeds := [][2]string{
		{base, ""}, {`{"enabled": false}`, `W/"abc"`}, {`{"enabled": true}`, `"hdr"`},
		{strings.Replace(base, "10000", "NaN", 1), ""}, {``, ""}, {`{`, ""}, {`[]`, ""},
		{`null`, ""}, {`{"enabled": "true"}`, ""}, {`{"enabled": null}`, ""},
		{`{"enabled": true} trailing`, ""}, {"\xff\xfe", ""},
		{`{"enabled": true, "enabled": false}`, ""}, {`{"enabled": true, "etag": "\ud800"}`, ""},
		{`{"enabled": true}`, `"a b"`}, {`{"enabled": true, "etag": "` + strings.Repeat("a", 257) + `"}`, ""},
		{`{"enabled": true, "type": "módulo 模块", "x": [[[[{}]]]]}`, ""},
		{`{"enabled": true, "poll_interval_s": 1e400}`, ""},
		{`{"enabled": true, "poll_interval_s": -0, "upload_interval_s": 9.999999999999999e307}`, ""},
		{`{"enabled": true, "max_stack_depth": 99999999999999999999999}`, ""},
	}
	for _, f := range []string{"sampling_interval_us", "upload_interval_s", "max_stack_depth", "poll_interval_s"} {
		for _, v := range []string{"0", "-5", "1e12", "30.5", `"60"`, "null", "true", "[1]", "Infinity", "1e308"} {
			seeds = append(seeds, [2]string{`{"enabled": true, "` + f + `": ` + v + `}`, ""})
		}
	}
	return seeds
}

// checkConfigInvariants fails t unless parseConfig(body) keeps DESIGN §5's promises.
func checkConfigInvariants(t *testing.T, body []byte, header string) {
	t.Helper()
	lim := defaultLimits()
	var c remoteConfig
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("parseConfig panicked on %q: %v", body, p)
			}
		}()
		c, err = parseConfig(body, lim, header)
	}()
	c2, err2 := parseConfig(body, lim, header)
	if !reflect.DeepEqual(c, c2) || (err == nil) != (err2 == nil) {
		t.Fatalf("not deterministic on %q: %+v, %v then %+v, %v", body, c, err, c2, err2)
	}
	if err != nil {
		if !errors.Is(err, errConfig) {
			t.Fatalf("error not wrapping errConfig on %q: %v", body, err)
		}
		return
	}
	// Accepted: an independent decoding must find a JSON object whose "enabled" is the
	// boolean the parser returned.
	// Fields are decoded one by one: a number beyond float64 in an unknown field is valid
	// JSON that a decoding of the whole body into interface{} would refuse.
	var raw map[string]json.RawMessage
	if len(body) > int(lim.configMaxBytes) || !json.Valid(body) || json.Unmarshal(body, &raw) != nil || raw == nil {
		t.Fatalf("accepted a body that is not a JSON object of at most 64 KiB: %q", body)
	}
	obj := map[string]interface{}{}
	for _, k := range []string{"enabled", "type", "etag", "sampling_interval_us", "upload_interval_s",
		"max_stack_depth", "poll_interval_s"} {
		if r, ok := raw[k]; ok {
			var v interface{}
			if json.Unmarshal(r, &v) != nil {
				t.Fatalf("accepted %s = %s: %q", k, r, body)
			}
			obj[k] = v
		}
	}
	if e, ok := obj["enabled"].(bool); !ok || e != c.enabled {
		t.Fatalf("enabled %v but the body says %#v: %q", c.enabled, obj["enabled"], body)
	}
	within := func(name string, v, lo, hi float64) {
		if math.IsNaN(v) || v < lo || v > hi {
			t.Fatalf("%s = %v outside [%v, %v] for %q", name, v, lo, hi, body)
		}
	}
	within("sampling_interval_us", float64(c.samplingIntervalUS), 1000, 1e6)
	within("upload_interval", float64(c.uploadInterval), float64(lim.uploadIntervalMin),
		float64(lim.uploadIntervalMax))
	within("poll_interval", float64(c.pollInterval), float64(lim.pollIntervalMin),
		float64(lim.pollIntervalMax))
	within("max_stack_depth", float64(c.maxStackDepth), float64(lim.stackDepthMin),
		float64(lim.stackDepthMax))
	// A number in range is used as sent (to the nanosecond, or rounded to an integer).
	if v, ok := obj["poll_interval_s"].(float64); ok && v >= 1 && v <= 600 &&
		math.Abs(c.pollInterval.Seconds()-v) > 1e-9*v+1e-9 {
		t.Fatalf("poll_interval_s %v became %v", v, c.pollInterval)
	}
	if v, ok := obj["upload_interval_s"].(float64); ok && v >= 10 && v <= 300 &&
		math.Abs(c.uploadInterval.Seconds()-v) > 1e-9*v+1e-9 {
		t.Fatalf("upload_interval_s %v became %v", v, c.uploadInterval)
	}
	if v, ok := obj["max_stack_depth"].(float64); ok && v >= 1 && v <= 256 && math.Abs(float64(c.maxStackDepth)-v) >= 1 {
		t.Fatalf("max_stack_depth %v became %v", v, c.maxStackDepth)
	}
	if t0, ok := obj["type"].(string); ok && t0 != c.ptype {
		t.Fatalf("type %q became %q", t0, c.ptype)
	} else if _, present := obj["type"]; !present && c.ptype != "cpu" {
		t.Fatalf("absent type became %q", c.ptype)
	}
	if e, ok := obj["etag"].(string); ok && e != c.etag {
		t.Fatalf("etag %q became %q", e, c.etag)
	}
	// Every etag kept can be sent back: at most 256 printable ASCII characters but '"'.
	if len(c.etag) > 256 || strings.IndexFunc(c.etag, func(r rune) bool { return r < 0x21 || r > 0x7e || r == '"' }) >= 0 {
		t.Fatalf("etag %q cannot be sent back", c.etag)
	}
}

// TestSharedFuzzInputs replays sdk/testdata/config_fuzz/, the corpus the five SDKs share: one
// verdict per file, an invalid-* body refused (profiling off), any other keeping the
// invariants.
func TestSharedFuzzInputs(t *testing.T) {
	dir := filepath.Join("..", "testdata", "config_fuzz")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Name() == "README.md" {
			continue
		}
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n++
		checkConfigInvariants(t, body, "")
		if _, err := parseConfig(body, defaultLimits(), ""); strings.HasPrefix(e.Name(), "invalid-") &&
			!errors.Is(err, errConfig) {
			t.Errorf("%s: want refused (profiling off), got %v", e.Name(), err)
		}
	}
	if n == 0 {
		t.Fatalf("%s holds no inputs", dir)
	}
}

// FuzzParseConfig: the invariants above for any body and ETag header.
func FuzzParseConfig(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		checkConfigInvariants(t, body, header)
	})
}
