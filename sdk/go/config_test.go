package roottrace

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// One row per field and case: the JSON value given, and the clamped result (or invalid).
func TestConfigClampTable(t *testing.T) {
	lim := defaultLimits()
	type want struct {
		upload  time.Duration
		poll    time.Duration
		depth   int
		interUS int64
	}
	base := want{60 * time.Second, 10 * time.Second, 256, 10000}
	cases := []struct {
		field, value string
		invalid      bool
		mod          func(*want)
	}{
		{"upload_interval_s", "1", false, func(w *want) { w.upload = 10 * time.Second }},
		{"upload_interval_s", "-5", false, func(w *want) { w.upload = 10 * time.Second }},
		{"upload_interval_s", "1e12", false, func(w *want) { w.upload = 300 * time.Second }},
		{"upload_interval_s", "30.5", false, func(w *want) { w.upload = 30500 * time.Millisecond }},
		{"upload_interval_s", `"60"`, true, nil},
		{"upload_interval_s", "NaN", true, nil},
		{"upload_interval_s", "null", true, nil},
		{"upload_interval_s", "", false, nil}, // missing: the default
		{"poll_interval_s", "0", false, func(w *want) { w.poll = time.Second }},
		{"poll_interval_s", "-1", false, func(w *want) { w.poll = time.Second }},
		{"poll_interval_s", "1e308", false, func(w *want) { w.poll = 600 * time.Second }},
		{"poll_interval_s", "true", true, nil},
		{"poll_interval_s", "Infinity", true, nil},
		{"poll_interval_s", "", false, nil},
		{"max_stack_depth", "0", false, func(w *want) { w.depth = 1 }},
		{"max_stack_depth", "-3", false, func(w *want) { w.depth = 1 }},
		{"max_stack_depth", "100000", false, func(w *want) { w.depth = 256 }},
		{"max_stack_depth", "64", false, func(w *want) { w.depth = 64 }},
		{"max_stack_depth", "[1]", true, nil},
		{"max_stack_depth", "NaN", true, nil},
		{"max_stack_depth", "", false, nil},
		{"sampling_interval_us", "0", false, func(w *want) { w.interUS = 1000 }},
		{"sampling_interval_us", "-20000", false, func(w *want) { w.interUS = 1000 }},
		{"sampling_interval_us", "1e12", false, func(w *want) { w.interUS = 1000000 }},
		{"sampling_interval_us", `"1"`, true, nil},
		{"sampling_interval_us", "NaN", true, nil},
		{"sampling_interval_us", "", false, nil},
	}
	for _, c := range cases {
		body := `{"enabled": true, "type": "cpu", "etag": "e1"`
		if c.value != "" {
			body += `, "` + c.field + `": ` + c.value
		}
		body += "}"
		got, err := parseConfig([]byte(body), lim, "")
		if c.invalid {
			if !errors.Is(err, errConfig) {
				t.Errorf("%s=%s: want invalid, got %+v, %v", c.field, c.value, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s=%s: %v", c.field, c.value, err)
			continue
		}
		w := base
		if c.mod != nil {
			c.mod(&w)
		}
		g := want{got.uploadInterval, got.pollInterval, got.maxStackDepth, got.samplingIntervalUS}
		if g != w || !got.enabled || got.etag != "e1" || got.ptype != "cpu" {
			t.Errorf("%s=%s: got %+v, want %+v", c.field, c.value, g, w)
		}
	}
}

func TestConfigInvalidWholeBodies(t *testing.T) {
	lim := defaultLimits()
	for _, body := range []string{
		``, `{`, `[]`, `null`, `"enabled"`, `{"enabled": "true"}`, `{"enabled": 1}`,
		`{"enabled": null}`, `{}`, `{"enabled": true, "type": 5}`,
		`{"enabled": true, "etag": 7}`, `{"enabled": true, "sampling_interval_us": NaN}`,
		`{"enabled": true} trailing`, "\xff\xfe",
		`{"enabled": true, "pad": "` + strings.Repeat("a", 70000) + `"}`,
		// An etag the server would refuse in every later poll's query (414 past ~32 KB).
		`{"enabled": true, "etag": "` + strings.Repeat("a", 257) + `"}`,
		`{"enabled": true, "etag": "a b"}`, `{"enabled": true, "etag": "caf\u00e9"}`,
	} {
		if c, err := parseConfig([]byte(body), lim, ""); !errors.Is(err, errConfig) {
			t.Errorf("%.40q: want invalid, got %+v", body, c)
		}
	}
}

func TestConfigTypeETagAndDefaults(t *testing.T) {
	c, err := parseConfig([]byte(`{"enabled": false, "type": "wall"}`), defaultLimits(), `W/"abc"`)
	if err != nil {
		t.Fatal(err)
	}
	// An unknown type is a request, never malformed; the header's etag is unquoted.
	if c.enabled || c.ptype != "wall" || c.etag != "abc" || c.uploadInterval != 60*time.Second ||
		c.pollInterval != 10*time.Second || c.maxStackDepth != 256 {
		t.Fatalf("%+v", c)
	}
	c, _ = parseConfig([]byte(`{"enabled": true, "etag": "body"}`), defaultLimits(), `"hdr"`)
	if c.etag != "body" || c.ptype != "cpu" {
		t.Fatalf("%+v", c)
	}
	// A malformed header etag is ignored; a 256-character etag is kept.
	long := strings.Repeat("f", 256)
	c, err = parseConfig([]byte(`{"enabled": true}`), defaultLimits(), `"a b"`)
	if err != nil || c.etag != "" {
		t.Fatalf("%+v, %v", c, err)
	}
	if c, err = parseConfig([]byte(`{"enabled": true, "etag": "`+long+`"}`), defaultLimits(), ""); err != nil || c.etag != long {
		t.Fatalf("%+v, %v", c, err)
	}
}

func TestStatusGrammar(t *testing.T) {
	cases := map[string][2]string{
		"profiling":                            {"profiling", ""},
		"declined: CPU profiler in use":        {"declined", "CPU profiler in use"},
		"error: caf? ?":                        {"error", "café \x01"},
		"error: x":                             {"bogus", "x"},
		"disabled":                             {"disabled", "   "},
		"waiting: " + strings.Repeat("a", 200): {"waiting", strings.Repeat("a", 300)},
	}
	for want, in := range cases {
		got := formatStatus(in[0], in[1])
		if got != want || !statusRE.MatchString(got) {
			t.Errorf("formatStatus(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
	for _, bad := range []string{"profiling:", "profiling: ", "running", "error: \x01", "declined:x"} {
		if statusRE.MatchString(bad) {
			t.Errorf("%q matched", bad)
		}
	}
}

func TestStartRefusesBadOptionsAndReportsThem(t *testing.T) {
	t.Setenv("ROOTTRACE_SERVER", "")
	t.Setenv("ROOTTRACE_KEY", "")
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{}, "error: missing option: server, key, service"},
		{Options{Server: "ftp://x", Key: "k", Service: "s"}, "error: server must be an http:// or https:// URL"},
		{Options{Server: "http://x", Key: "k", Service: "a/b"}, "error: invalid service name (contains '/')"},
		{Options{Server: "http://x", Key: "k", Service: "s", Instance: "a\nb"}, "error: invalid instance name (control character U+000A)"},
		{Options{Server: "http://x", Key: "k", Service: "s", DutyCycle: DutyCycle{On: -time.Second, Every: time.Minute}},
			"error: invalid duty cycle (On -1s, Every 60s): On must be positive (at least 1s is used) and Every longer than On"},
		{Options{Server: "http://x", Key: "k", Service: "s", DutyCycle: DutyCycle{On: 10 * time.Second}},
			"error: invalid duty cycle (On 10s, Every 0s): On must be positive (at least 1s is used) and Every longer than On"},
		{Options{Server: "http://x", Key: "k", Service: "s", DutyCycle: DutyCycle{On: 10 * time.Second, Every: 10 * time.Second}},
			"error: invalid duty cycle (On 10s, Every 10s): On must be positive (at least 1s is used) and Every longer than On"},
		{Options{Server: "http://x", Key: "k", Service: "s", DutyCycle: DutyCycle{On: time.Nanosecond, Every: 500 * time.Millisecond}},
			"error: invalid duty cycle (On 1e-09s, Every 0.5s): On must be positive (at least 1s is used) and Every longer than On"},
		{Options{Server: "http://x", Key: "k", Service: "s", DutyCycle: DutyCycle{Every: time.Minute}},
			"error: invalid duty cycle (On 0s, Every 60s): On must be positive (at least 1s is used) and Every longer than On"},
	} {
		if err := Start(c.opts); err == nil {
			t.Errorf("%+v: no error", c.opts)
		}
		if s := Status(); s.Status != c.want || s.State != StateError {
			t.Errorf("%+v: status %q, want %q", c.opts, s.Status, c.want)
		}
	}
	Stop(time.Second) // nothing started: does nothing
}

func TestEnvironmentFallbacksAndInstanceID(t *testing.T) {
	t.Setenv("ROOTTRACE_SERVER", "http://127.0.0.1:9")
	t.Setenv("ROOTTRACE_KEY", "k")
	a, err := newAgentFromOptions(Options{Service: "svc"}, defaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if a.opts.Server != "http://127.0.0.1:9" || a.opts.Key != "k" {
		t.Fatalf("%+v", a.opts)
	}
	parts := strings.Split(a.opts.Instance, "-")
	if len(parts) < 3 || len(parts[len(parts)-1]) != 4 || nameProblem(a.opts.Instance) != "" {
		t.Fatalf("instance %q", a.opts.Instance)
	}
	if a.report().Status != "disabled: not started" {
		t.Fatal(a.report().Status)
	}
}

// A valid duty cycle: a short On is made 1 s; the zero value is back to back.
func TestDutyCycleClamp(t *testing.T) {
	for _, c := range []struct {
		in, want DutyCycle
	}{
		{DutyCycle{On: time.Nanosecond, Every: 2 * time.Second}, DutyCycle{On: time.Second, Every: 2 * time.Second}},
		{DutyCycle{On: 10 * time.Second, Every: time.Minute}, DutyCycle{On: 10 * time.Second, Every: time.Minute}},
		{DutyCycle{}, DutyCycle{}},
	} {
		a, err := newAgentFromOptions(Options{Server: "http://x", Key: "k", Service: "s", DutyCycle: c.in}, defaultLimits())
		if err != nil {
			t.Errorf("%+v: %v", c.in, err)
		} else if a.opts.DutyCycle != c.want || a.opts.DutyCycle.active() != (c.want != DutyCycle{}) {
			t.Errorf("%+v: %+v", c.in, a.opts.DutyCycle)
		}
	}
}

// The compiled bounds are DESIGN §5's (docs/security.md cites this beside the SDKs' clamps):
// what a hostile control plane's numbers are clamped to, and the upload size cap.
func TestCompiledBoundsAreTheDocumentedOnes(t *testing.T) {
	l := defaultLimits()
	got := []any{l.uploadIntervalMin, l.uploadIntervalMax, l.stackDepthMax, l.pollIntervalMin,
		l.pollIntervalMax, l.uploadMaxBytes, l.configMaxBytes, l.repollMin,
		l.samplingIntervalMinUS, l.samplingIntervalMaxUS, l.stackDepthMin, l.etagMaxLen}
	want := []any{10 * time.Second, 300 * time.Second, 256, time.Second, 600 * time.Second,
		4 << 20, int64(64 << 10), time.Second,
		int64(1000), int64(1000000), 1, 256}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bound %d: %v, want %v", i, got[i], want[i])
		}
	}
}
