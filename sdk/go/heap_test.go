package roottrace

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestHeapGoalCostly(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		h    heapGoal
		want bool
	}{
		{heapGoal{goal: 4 * mib, gogc: 100}, true},                  // at the minimum
		{heapGoal{goal: 4*mib + profBufBytes - 1, gogc: 100}, true}, // the buffer still takes room
		{heapGoal{goal: 4*mib + profBufBytes, gogc: 100}, false},    // the goal grew with it
		{heapGoal{goal: 256 * mib, gogc: 100}, false},               // a real heap
		{heapGoal{goal: 8*mib + profBufBytes - 1, gogc: 200}, true}, // GOGC=200: minimum 8 MiB
		{heapGoal{goal: 8*mib + profBufBytes, gogc: 200}, false},    //
		{heapGoal{goal: 2*mib + profBufBytes/2, gogc: 50}, true},    // GOGC=50: minimum 2 MiB
		{heapGoal{goal: 3 * mib, gogc: 20}, false},                  // GOGC=20: 0.8 MiB + the buffer
		{heapGoal{goal: 4 * mib, gogc: -1}, false},                  // GOGC=off
		{heapGoal{goal: 0, gogc: 100}, false},                       // nothing read
	} {
		if got := c.h.costly(4 * mib); got != c.want {
			t.Errorf("%+v: %v, want %v", c.h, got, c.want)
		}
	}
}

// The lowest goal read over a profile decides: one high read in the middle of a GC cycle
// does not take a minimum heap for a real one.
func TestHeapWatchKeepsTheLowestRead(t *testing.T) {
	const mib = 1 << 20
	reads := []uint64{13 * mib, 4 * mib, 7 * mib}
	n := 0
	w := &heapWatch{probe: func() heapGoal { n++; return heapGoal{goal: reads[(n-1)%len(reads)], gogc: 100} },
		every: time.Second}
	t0 := time.Now()
	w.reset(t0)
	w.read(t0.Add(500 * time.Millisecond)) // not due yet
	for i := 1; i <= 3; i++ {
		w.read(t0.Add(time.Duration(i) * time.Second))
	}
	if n != 3 || w.low.goal != 4*mib || !w.costly(t0.Add(4*time.Second), 4*mib) {
		t.Fatalf("%d reads, lowest %d", n, w.low.goal)
	}
	// No read yet since the reset: costly reads once, now.
	reads = []uint64{64 * mib}
	n = 0
	w.reset(t0)
	if w.costly(t0, 4*mib) || n != 1 {
		t.Fatalf("%d reads, lowest %d", n, w.low.goal)
	}
}

// The runtime's own figures: a goal of at least the minimum, and GOGC as the environment
// sets it (100 when unset).
func TestReadHeapGoal(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set in the environment")
	}
	h := readHeapGoal()
	if h.gogc != 100 || h.goal < defaultLimits().heapMinimum {
		t.Fatalf("%+v", h)
	}
}

// adaptiveAgent starts an agent with the zero DutyCycle, a 1 s "on" part in 2.5 s, and the
// heap at its minimum while atMin holds.
func adaptiveAgent(t *testing.T, url string, atMin *atomic.Bool) *agent {
	t.Helper()
	lim := defaultLimits()
	lim.defaultDuty = DutyCycle{On: time.Second, Every: 2500 * time.Millisecond}
	lim.uploadIntervalMin = 500 * time.Millisecond
	a, err := newAgentFromOptions(Options{Server: url, Key: "test-key", Service: "svc"}, lim)
	if err != nil {
		t.Fatal(err)
	}
	a.heapProbe = func() heapGoal {
		if atMin.Load() {
			return heapGoal{goal: lim.heapMinimum, gogc: 100}
		}
		return heapGoal{goal: 64 * lim.heapMinimum, gogc: 100}
	}
	a.start()
	t.Cleanup(func() { a.stop(2 * time.Second) })
	return a
}

// At the GC's minimum goal the default profiles the "on" part of each period and says so;
// with a real heap it profiles back to back, and goes back to the cycle when the heap falls.
func TestDefaultDutyCycleFollowsTheHeap(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1, "upload_interval_s", 2)
	var atMin atomic.Bool
	atMin.Store(true)
	a := adaptiveAgent(t, f.url(), &atMin)
	if !waitFor(3*time.Second, func() bool { return on(a) && a.holding.Load() }) {
		t.Fatalf("%+v", a.report())
	}
	// The on part ends after 1 s: the profiler is let go, and the status says why.
	if !waitFor(2*time.Second, func() bool { return !a.holding.Load() }) || !a.profiling.Load() {
		t.Fatalf("%+v", a.report())
	}
	want := "profiling: duty cycle 1s every 2.5s (heap near the GC's minimum goal)"
	if s := a.report().Status; s != want {
		t.Fatalf("%q, want %q", s, want)
	}
	if !waitFor(2*time.Second, func() bool { return len(f.allUploads()) >= 1 }) {
		t.Fatalf("no upload: %+v", a.report())
	}
	if d := f.allUploads()[0].prof.durNanos; d < 950e6 || d > 1500e6 {
		t.Fatalf("first profile covers %d ns, want the 1 s on part", d)
	}
	// A real heap: from the next on part, back to back over whole upload intervals.
	atMin.Store(false)
	if !waitFor(3*time.Second, func() bool { return a.holding.Load() }) {
		t.Fatalf("%+v", a.report())
	}
	if d := heldFor(a, 3*time.Second); d < 3*time.Second {
		t.Fatalf("let go of the profiler %v into a real heap's profiling", d)
	}
	if s := a.report().Status; s != "profiling" {
		t.Fatalf("%q", s)
	}
	// The heap falls to the minimum: the off part at the end of the first profile that read
	// it. That is the current one, or the next when the current one ends before its next
	// read (every 0.5 s): the gap between two back-to-back profiles is not the off part.
	atMin.Store(true)
	if !waitFor(5*time.Second, func() bool { return !a.holding.Load() && a.heapAtMin.Load() }) {
		t.Fatalf("%+v", a.report())
	}
	if s := a.report().Status; !strings.HasSuffix(s, "(heap near the GC's minimum goal)") {
		t.Fatalf("%q", s)
	}
}

// Continuous profiles back to back even at the GC's minimum goal.
func TestContinuousIgnoresTheHeap(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1, "upload_interval_s", 1)
	lim := defaultLimits()
	lim.defaultDuty = DutyCycle{On: time.Second, Every: 2500 * time.Millisecond}
	lim.uploadIntervalMin = 500 * time.Millisecond
	a, err := newAgentFromOptions(Options{Server: f.url(), Key: "k", Service: "svc", DutyCycle: Continuous}, lim)
	if err != nil {
		t.Fatal(err)
	}
	a.heapProbe = func() heapGoal { return heapGoal{goal: lim.heapMinimum, gogc: 100} }
	a.start()
	t.Cleanup(func() { a.stop(2 * time.Second) })
	if !waitFor(3*time.Second, func() bool { return a.holding.Load() }) {
		t.Fatalf("%+v", a.report())
	}
	if d := heldFor(a, 2500*time.Millisecond); d < 2500*time.Millisecond {
		t.Fatalf("let go of the profiler %v in", d)
	}
	if s := a.report().Status; s != "profiling" {
		t.Fatalf("%q", s)
	}
}

// heldFor watches the profiler for up to d and returns how long the agent held it without a
// break longer than the 100 ms between one profile's stop and the next one's start.
func heldFor(a *agent, d time.Duration) time.Duration {
	t0 := time.Now()
	for time.Since(t0) < d {
		if !a.holding.Load() && !waitFor(100*time.Millisecond, func() bool { return a.holding.Load() }) {
			return time.Since(t0)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(t0)
}
