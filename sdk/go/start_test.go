package roottrace

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// The public API: Start, a second Start, Status, Stop (twice); an idle service's profiles
// are uploaded too, empty.
func TestPublicStartStatusStopAndEmptyProfiles(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "upload_interval_s", 0.3)
	lim := defaultLimits()
	shortUploads(&lim)
	if err := startWith(Options{Server: f.url(), Key: "k", Service: "svc", Instance: "inst-1"}, lim); err != nil {
		t.Fatal(err)
	}
	defer Stop(time.Second)
	if err := Start(Options{Server: f.url(), Key: "k", Service: "svc"}); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if !waitFor(3*time.Second, func() bool { return Status().Status == "profiling" }) {
		t.Fatalf("%+v", Status())
	}
	// The test goroutine sleeps: nothing of the application runs, and the SDK's own work
	// is left out, so profiles are mostly empty, and uploaded all the same. On a loaded
	// host the runtime's own work (GC) lands in some: wait for an empty one among them.
	emptyUploaded := func() bool {
		for _, u := range f.allUploads() {
			if len(u.prof.samples) == 0 {
				return true
			}
		}
		return false
	}
	// The fake records an upload before its answer reaches the SDK, which counts it in
	// ProfilesSent only then: wait for the count too (CI once read 2 beside 3 uploads).
	if !waitFor(10*time.Second, func() bool {
		return len(f.allUploads()) >= 3 && emptyUploaded() && Status().ProfilesSent >= 3
	}) {
		t.Fatalf("no empty profile among %d uploads; %+v", len(f.allUploads()), Status())
	}
	for _, u := range f.allUploads() {
		if u.answer != 201 || u.q["instance"] != "inst-1" || u.prof.durNanos < 250e6 {
			t.Fatalf("%+v", u)
		}
	}
	s := Status()
	if s.State != StateProfiling || s.Instance != "inst-1" || s.Service != "svc" || s.ProfilesSent < 3 || s.IntervalUS != 10000 {
		t.Fatalf("%+v", s)
	}
	Stop(time.Second)
	Stop(time.Second)
	if s := Status(); s.Status != "disabled: stopped" || s.Reason != "stopped" {
		t.Fatalf("%+v", s)
	}
}

// Config, the former name of Options, is the same type for one release: code written
// against it still compiles, and Start takes it (sdk/go/CHANGELOG.md).
func TestConfigIsTheDeprecatedNameOfOptions(t *testing.T) {
	if c, o := reflect.TypeOf(Config{}), reflect.TypeOf(Options{}); c != o {
		t.Fatalf("Config is %v, Options is %v", c, o)
	}
	var old Config = Options{Service: "svc"} // assignable both ways, without a conversion
	var opts Options = old
	if opts.Service != "svc" {
		t.Fatalf("%+v", opts)
	}
	t.Setenv("ROOTTRACE_SERVER", "")
	t.Setenv("ROOTTRACE_KEY", "")
	if err := Start(Config{Service: "svc"}); err == nil ||
		err.Error() != "roottrace: missing option: server, key" {
		t.Fatalf("Start(Config{Service}): %v", err)
	}
	if s := Status(); s.Status != "error: missing option: server, key" ||
		s.State != StateError || s.Reason != "missing option: server, key" ||
		s.LastError != s.Status {
		t.Fatalf("%+v", s)
	}
	f := newFakeCP(t)
	f.setConfig("enabled", false, "poll_interval_s", 1)
	old = Config{Server: f.url(), Key: "k", Service: "svc", Instance: "inst-old"}
	if err := Start(old); err != nil {
		t.Fatal(err)
	}
	defer Stop(time.Second)
	if !waitFor(3*time.Second, func() bool { return Status().Status == StateDisabled }) {
		t.Fatalf("%+v", Status())
	}
	s := Status()
	if s.State != StateDisabled || s.Reason != "" || s.Service != "svc" || s.Instance != "inst-old" {
		t.Fatalf("%+v", s)
	}
	if p := f.allPolls()[0].q; p["service"] != "svc" || p["instance"] != "inst-old" {
		t.Fatalf("first poll: %v", p)
	}
}

// StatusInfo has the fields of docs/sdk/README.md ("One vocabulary"), in its order, and
// Reason is the status string's part after "<state>: ".
func TestStatusInfoHasTheSharedFieldsInOrder(t *testing.T) {
	b, err := json.Marshal(StatusInfo{Status: "waiting: no config yet", State: StateWaiting,
		Reason: "no config yet", IntervalUS: 10000, Service: "svc", Instance: "i-1",
		ProfilesSent: 1, ProfilesDropped: 2, ProfilesQueued: 3, Samples: 4, LastError: "e"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"status":"waiting: no config yet","state":"waiting","reason":"no config yet",` +
		`"interval_us":10000,"service":"svc","instance":"i-1","profiles_sent":1,` +
		`"profiles_dropped":2,"profiles_queued":3,"samples":4,"last_error":"e"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	for _, c := range []struct{ status, state, reason string }{
		{"profiling", "profiling", ""},
		{"disabled: not started", "disabled", "not started"},
		{"error: invalid config: etag: x", "error", "invalid config: etag: x"},
		{"profiling: Go samples at 100 Hz (10000 us), not 20000 us", "profiling",
			"Go samples at 100 Hz (10000 us), not 20000 us"},
	} {
		if st, r := splitStatus(c.status); st != c.state || r != c.reason {
			t.Errorf("%q: state %q, reason %q", c.status, st, r)
		}
	}
}
