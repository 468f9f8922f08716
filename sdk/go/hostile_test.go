// A hostile control plane cannot make the SDK spin, and profiling is off wherever DESIGN
// §5 says. Only the poll interval floor and the poll deadline are shortened, so that each
// case takes seconds.

package roottrace

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const hostilePoll = 200 * time.Millisecond

func hostileBody(kv ...interface{}) []byte {
	c := map[string]interface{}{"enabled": true, "type": "cpu", "sampling_interval_us": 10000,
		"upload_interval_s": 60, "max_stack_depth": 256, "poll_interval_s": hostilePoll.Seconds(), "etag": "hostile"}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(c)
	return b
}

func TestHostileControlPlane(t *testing.T) {
	// kind: "clamped" (profiling on, Go's 10000 us), "invalid" (off at once), "absent"
	// (off after 3 poll intervals).
	cases := []struct {
		name, mode string
		body       []byte
		code       int
		kind       string
	}{
		{"interval_0", "body", hostileBody("sampling_interval_us", 0), 0, "clamped"},
		{"interval_negative", "body", hostileBody("sampling_interval_us", -20000), 0, "clamped"},
		{"interval_1e12", "body", hostileBody("sampling_interval_us", 1e12), 0, "clamped"},
		{"interval_nan", "body", []byte(strings.Replace(string(hostileBody()), "10000", "NaN", 1)), 0, "invalid"},
		{"interval_string", "body", hostileBody("sampling_interval_us", "1"), 0, "invalid"},
		{"body_50MB", "huge", nil, 0, "invalid"},
		{"body_50MB_no_length", "hugeClose", nil, 0, "invalid"},
		{"slow_drip", "drip", nil, 0, "absent"},
		{"http_500", "status", nil, 500, "absent"},
		{"tcp_reset", "reset", nil, 0, "absent"},
		{"no_answer", "hang", nil, 0, "absent"},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			hostileCase(t, c.mode, c.body, c.code, c.kind)
		})
	}
}

func hostileCase(t *testing.T, mode string, body []byte, code int, kind string) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", hostilePoll.Seconds())
	f.setMode(mode, body, code)
	a := testAgent(t, f.url(), func(l *limits) {
		l.pollIntervalMin, l.defaultPoll, l.requestSlack = hostilePoll, hostilePoll, 500*time.Millisecond
	})
	// Phase A: hostile from the first poll.
	time.Sleep(700 * time.Millisecond)
	r := a.report()
	if kind == "clamped" {
		if !a.holding.Load() || r.State != StateProfiling || r.IntervalUS != 10000 {
			t.Fatalf("phase A: %+v", r)
		}
	} else if a.starts.Load() != 0 || a.holding.Load() || (r.State != StateError && r.State != StateWaiting) {
		t.Fatalf("phase A: %+v", r)
	}
	// Phase B: an honest config turns profiling on.
	f.setMode("normal", nil, 0)
	f.setConfig("sampling_interval_us", 10000)
	if !waitFor(2*time.Second, func() bool { return on(a) }) {
		t.Fatalf("phase B: %+v", a.report())
	}
	time.Sleep(300 * time.Millisecond)
	// Phase C: hostile again.
	tSwitch := time.Now()
	f.setMode(mode, body, code)
	if kind == "clamped" {
		time.Sleep(800 * time.Millisecond)
		if r := a.report(); !on(a) || r.IntervalUS != 10000 {
			t.Fatalf("phase C: %+v", r)
		}
	} else {
		limit := hostilePoll + 500*time.Millisecond
		if kind == "absent" {
			limit = 3*hostilePoll + 500*time.Millisecond
		}
		if !waitFor(limit+time.Second, func() bool { return !a.holding.Load() }) || time.Since(tSwitch) > limit {
			t.Fatalf("phase C: off after %v (limit %v): %+v", time.Since(tSwitch), limit, a.report())
		}
		if r := a.report(); r.State != StateError {
			t.Fatalf("phase C: %+v", r)
		}
		n := a.starts.Load()
		time.Sleep(400 * time.Millisecond)
		if a.starts.Load() != n || a.holding.Load() {
			t.Fatal("profiling again while hostile")
		}
	}
	// No spinning: one profile per phase that profiled (the upload interval is 60 s), and
	// at most one config request per poll interval.
	if n := a.starts.Load(); n > 2 {
		t.Fatalf("%d profiles started", n)
	}
	span := time.Since(tSwitch)
	if n := len(f.pollsSince(tSwitch)); float64(n) > span.Seconds()/hostilePoll.Seconds()+2 {
		t.Fatalf("%d polls in %v", n, span)
	}
	t0 := time.Now()
	a.stop(2 * time.Second)
	if d := time.Since(t0); d > 2500*time.Millisecond {
		t.Fatalf("stop took %v", d)
	}
}
