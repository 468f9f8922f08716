package roottrace

import (
	"errors"
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
	if err := startWith(Config{Server: f.url(), Key: "k", Service: "svc", Instance: "inst-1"}, lim); err != nil {
		t.Fatal(err)
	}
	defer Stop(time.Second)
	if err := Start(Config{Server: f.url(), Key: "k", Service: "svc"}); !errors.Is(err, ErrAlreadyStarted) {
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
	if !waitFor(10*time.Second, func() bool { return len(f.allUploads()) >= 3 && emptyUploaded() }) {
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
