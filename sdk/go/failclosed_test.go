// The control-plane protocol and the fail-closed transitions against the fake control
// plane (docs/control-plane.md), with the upload interval floor shortened for speed.

package roottrace

import (
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func shortUploads(l *limits) { l.uploadIntervalMin = 300 * time.Millisecond }

func TestProfilesOnlyAfterEnabledConfigAndStopsOnDisabled(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", false, "poll_interval_s", 1)
	a := testAgent(t, f.url(), nil)
	if !waitFor(3*time.Second, func() bool { return a.report().Status == "disabled" }) {
		t.Fatal(a.report())
	}
	time.Sleep(300 * time.Millisecond)
	if a.starts.Load() != 0 || a.holding.Load() {
		t.Fatal("profiled while disabled")
	}
	t0 := time.Now()
	f.setConfig("enabled", true)
	if !waitFor(3*time.Second, func() bool { return on(a) }) || time.Since(t0) > 2500*time.Millisecond {
		t.Fatalf("on after %v: %+v", time.Since(t0), a.report())
	}
	f.setConfig("enabled", false)
	t0 = time.Now()
	if !waitFor(2500*time.Millisecond, func() bool { return !a.holding.Load() }) {
		t.Fatal(a.report())
	}
	n := a.starts.Load()
	time.Sleep(300 * time.Millisecond)
	if a.report().Status != "disabled" || a.starts.Load() != n || a.holding.Load() {
		t.Fatalf("%+v", a.report())
	}
}

func TestPollParametersETagAndWait(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1)
	a := testAgent(t, f.url(), nil)
	if !waitFor(5*time.Second, func() bool { return len(f.allPolls()) >= 3 }) {
		t.Fatal("fewer than 3 polls")
	}
	ps := f.allPolls()
	first, second := ps[0].q, ps[1].q
	if _, ok := first["etag"]; ok {
		t.Fatalf("first poll has an etag: %v", first)
	}
	for _, q := range []map[string]string{first, second} {
		if q["service"] != "svc" || q["instance"] != a.opts.Instance || q["runtime"] != "go" ||
			q["sdk_version"] != SDKVersion || q["version"] != "1.0" || !strings.HasPrefix(q["runtime_version"], "go") ||
			q["interval_us"] != "10000" || !statusRE.MatchString(q["status"]) {
			t.Fatalf("%v", q)
		}
	}
	if !strings.HasPrefix(first["status"], "waiting") || second["status"] != "profiling" {
		t.Fatalf("%q %q", first["status"], second["status"])
	}
	if second["etag"] != "v2" || second["wait"] != "1" {
		t.Fatalf("%v", second)
	}
	if gap := ps[1].t.Sub(ps[0].t); gap < 990*time.Millisecond {
		t.Fatalf("second poll %v after the first", gap)
	}
	if !on(a) { // 304s keep the config valid
		t.Fatal(a.report())
	}
}

func TestTypeAndIntervalRequestsGoCannotHonour(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "type", "wall", "poll_interval_s", 1)
	a := testAgent(t, f.url(), nil)
	if !waitFor(3*time.Second, func() bool {
		return a.report().Status == "profiling: wall not supported, sending cpu"
	}) {
		t.Fatal(a.report())
	}
	f.setConfig("type", "cpu", "sampling_interval_us", 20000)
	want := "profiling: Go samples at 100 Hz (10000 us), not 20000 us"
	if !waitFor(3*time.Second, func() bool { return a.report().Status == want }) {
		t.Fatal(a.report())
	}
	if a.report().IntervalUS != 10000 || !on(a) {
		t.Fatal(a.report())
	}
}

func TestInvalidConfigStopsAtOnceAndValidResumes(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1)
	a := testAgent(t, f.url(), nil)
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatal(a.report())
	}
	f.setMode("body", []byte(`{"enabled": true, "sampling_interval_us": NaN}`), 0)
	t0 := time.Now()
	if !waitFor(3*time.Second, func() bool { return !a.holding.Load() }) || time.Since(t0) > 2200*time.Millisecond {
		t.Fatalf("off after %v", time.Since(t0))
	}
	if s := a.report().Status; !strings.HasPrefix(s, "error: invalid config: malformed JSON") {
		t.Fatal(s)
	}
	n := len(f.allPolls())
	waitFor(2*time.Second, func() bool { return len(f.allPolls()) > n })
	ps := f.allPolls()
	if _, ok := ps[len(ps)-1].q["etag"]; ok {
		t.Fatal("poll after an invalid config carries an etag")
	}
	f.setMode("normal", nil, 0)
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatal(a.report())
	}
}

func TestNoValidConfigForThreePollIntervalsStops(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 0.2)
	a := testAgent(t, f.url(), func(l *limits) { l.pollIntervalMin = 200 * time.Millisecond })
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatal(a.report())
	}
	f.setMode("status", nil, 503)
	t0 := time.Now()
	time.Sleep(250 * time.Millisecond)
	if !a.holding.Load() {
		t.Fatal("one failed poll stopped profiling")
	}
	if !waitFor(2*time.Second, func() bool { return !a.holding.Load() }) {
		t.Fatal(a.report())
	}
	if took := time.Since(t0); took < 350*time.Millisecond || took > time.Second {
		t.Fatalf("off after %v", took)
	}
	if s := a.report().Status; s != "error: no valid config for 3 poll intervals (config poll answered 503: boom)" {
		t.Fatal(s)
	}
	f.setMode("normal", nil, 0)
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatal(a.report())
	}
}

func TestRefusedPollForgetsTheETagAndA503KeepsIt(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1)
	a := testAgent(t, f.url(), nil)
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatal(a.report())
	}
	f.setCodes(503, 401) // the next poll gets 503, every later one 401 (the key revoked)
	if !waitFor(6*time.Second, func() bool { return !a.holding.Load() }) {
		t.Fatal("still profiling after 6 s of refused polls: " + a.report().Status)
	}
	if s := a.report().Status; s != "error: no valid config for 3 poll intervals (config poll answered 401: boom)" {
		t.Fatal(s)
	}
	waitFor(3*time.Second, func() bool { return len(f.codedPolls()) >= 3 })
	f.mu.Lock()
	tag := f.etag()
	f.mu.Unlock()
	coded := f.codedPolls()
	if _, ok := f.allPolls()[0].q["etag"]; ok || len(coded) < 3 {
		t.Fatalf("first poll %v; %d refused polls", f.allPolls()[0].q, len(coded))
	}
	// The poll answered 503 sends the 200's etag; the next one (answered 401) still does.
	for i, p := range coded[:2] {
		if p.q["etag"] != tag || p.q["wait"] != "1" {
			t.Fatalf("refused poll %d: etag %q, wait %q, want %q, 1", i+1, p.q["etag"], p.q["wait"], tag)
		}
	}
	for i, p := range coded[2:] {
		if e, ok := p.q["etag"]; ok || p.q["wait"] != "" {
			t.Fatalf("refused poll %d follows a 401 but sends etag %q, wait %q", i+3, e, p.q["wait"])
		}
	}
	n := len(f.allPolls())
	f.setMode("normal", nil, 0) // the key is restored
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatal("profiling did not resume: " + a.report().Status)
	}
	if p := f.allPolls()[n]; p.q["etag"] != "" || p.q["wait"] != "" {
		t.Fatalf("first poll after the refusal: etag %q, wait %q", p.q["etag"], p.q["wait"])
	}
}

func TestUpload409DropsAndStopsUntilEnabledAgain(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1, "upload_interval_s", 0.3)
	var n atomic.Int32
	f.uploadAnswer = func(map[string]string) int {
		if n.Add(1) == 1 {
			return 409
		}
		return 201
	}
	a := testAgent(t, f.url(), shortUploads)
	if !waitFor(5*time.Second, func() bool { return a.control().refused }) {
		t.Fatal(a.report())
	}
	if s := a.report().Status; !strings.HasPrefix(s, "disabled: upload refused (409)") {
		t.Fatal(s)
	}
	if a.report().ProfilesDropped != 1 {
		t.Fatal(a.report())
	}
	// The next poll asks afresh; the fake still says enabled, so profiling resumes.
	if !waitFor(3*time.Second, func() bool { return on(a) && !a.control().refused }) {
		t.Fatal(a.report())
	}
	waitFor(5*time.Second, func() bool { return len(f.allUploads()) >= 3 })
	ids := map[string]int{}
	for _, u := range f.allUploads() {
		ids[u.q["profile_id"]]++
	}
	for id, c := range ids {
		if c != 1 {
			t.Fatalf("profile %s uploaded %d times", id, c)
		}
	}
}

func TestUpload5xxRetriedWithSameProfileID(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "upload_interval_s", 0.3)
	var n atomic.Int32
	f.uploadAnswer = func(map[string]string) int {
		return map[int32]int{1: 503, 2: 500}[n.Add(1)] + 201*boolInt(n.Load() > 2)
	}
	a := testAgent(t, f.url(), func(l *limits) {
		shortUploads(l)
		l.backoffMin, l.backoffMax = 50*time.Millisecond, 100*time.Millisecond
	})
	if !waitFor(5*time.Second, func() bool { return len(f.allUploads()) >= 3 }) {
		t.Fatal(a.report())
	}
	ups := f.allUploads()
	if ups[0].answer != 503 || ups[1].answer != 500 || ups[2].answer != 201 {
		t.Fatalf("%d %d %d", ups[0].answer, ups[1].answer, ups[2].answer)
	}
	if ups[0].q["profile_id"] != ups[1].q["profile_id"] || ups[1].q["profile_id"] != ups[2].q["profile_id"] {
		t.Fatal("retry with another profile_id")
	}
	if !waitFor(2*time.Second, func() bool { return a.report().ProfilesSent >= 1 }) || !on(a) {
		t.Fatal(a.report())
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestUploadOther4xxDroppedAndProfilingGoesOn(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "upload_interval_s", 0.3)
	f.uploadAnswer = func(map[string]string) int { return 400 }
	a := testAgent(t, f.url(), shortUploads)
	if !waitFor(5*time.Second, func() bool { return len(f.allUploads()) >= 2 }) {
		t.Fatal(a.report())
	}
	ups := f.allUploads()
	if ups[0].q["profile_id"] == ups[1].q["profile_id"] || a.report().ProfilesDropped < 1 || !on(a) {
		t.Fatalf("%+v", a.report())
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestProfilesBackToBackAndTheirContents(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "upload_interval_s", 0.5)
	done := make(chan struct{})
	defer close(done)
	go func() { // the application's work
		for {
			select {
			case <-done:
				return
			default:
				appSideBurn(20 * time.Millisecond)
			}
		}
	}()
	a := testAgent(t, f.url(), shortUploads)
	if !waitFor(8*time.Second, func() bool { return len(f.allUploads()) >= 4 }) {
		t.Fatal(a.report())
	}
	ups := f.allUploads()[:4]
	for i, u := range ups {
		p, q := u.prof, u.q
		if q["runtime"] != "go" || q["service"] != "svc" || q["instance"] != a.opts.Instance || !uuidRE.MatchString(q["profile_id"]) {
			t.Fatalf("%v", q)
		}
		cpu, err := strconv.ParseInt(q["process_cpu_ns"], 10, 64)
		if err != nil || cpu <= 0 {
			t.Fatalf("process_cpu_ns %q", q["process_cpu_ns"])
		}
		if len(p.sampleTypes) != 2 || p.sampleTypes[0] != [2]string{"samples", "count"} ||
			p.sampleTypes[1] != [2]string{"cpu", "nanoseconds"} || p.period != 10000000 {
			t.Fatalf("%+v", p)
		}
		if p.durNanos < 450e6 || p.durNanos > 1500e6 {
			t.Fatalf("duration %d", p.durNanos)
		}
		if i > 0 && ups[i-1].prof.timeNanos+ups[i-1].prof.durNanos != p.timeNanos {
			t.Fatalf("gap between profiles %d and %d", i-1, i)
		}
		names := p.functions()
		if !names[pkgPath+".appSideBurn"] {
			t.Fatalf("profile %d lacks the application's function: %v", i, names)
		}
		for n := range names {
			if strings.Contains(n, "(*agent)") || strings.Contains(n, "(*uploader)") || strings.Contains(n, "(*httpClient)") ||
				strings.HasPrefix(n, "runtime/pprof.") || strings.HasPrefix(n, "net/http.(*persistConn)") {
				t.Fatalf("the SDK's own goroutine in the profile: %s", n)
			}
		}
		// The sampled CPU agrees with the OS's count for the process over the profile
		// (CPU time, whatever the machine's load; the SDK's own share is small).
		var sampled int64
		for _, s := range p.samples {
			sampled += s.value
		}
		if cpu >= 100e6 && (float64(sampled) < 0.4*float64(cpu) || float64(sampled) > 1.5*float64(cpu)+2*float64(p.period)) {
			t.Fatalf("profile %d: sampled %d ns of CPU, the OS counted %d", i, sampled, cpu)
		}
	}
	if d := time.Since(time.Unix(0, ups[0].prof.timeNanos)); d < 0 || d > 10*time.Second {
		t.Fatalf("time_nanos %v ago", d)
	}
}

func TestStopFlushesTheProfileInProgress(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "upload_interval_s", 60)
	a := testAgent(t, f.url(), nil)
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatal(a.report())
	}
	burnCPU(200 * time.Millisecond)
	t0 := time.Now()
	a.stop(5 * time.Second)
	if time.Since(t0) > 2*time.Second {
		t.Fatalf("stop took %v", time.Since(t0))
	}
	ups := f.allUploads()
	if len(ups) != 1 || ups[0].answer != 201 || ups[0].prof.durNanos <= 0 || !ups[0].prof.functions()[pkgPath+".burnCPU"] {
		t.Fatalf("%d uploads", len(ups))
	}
	if a.report().Status != "disabled: stopped" || a.holding.Load() || !isClosed(a.profDone) || !isClosed(a.upDone) {
		t.Fatal(a.report())
	}
}

func TestStopIsBoundedWhenTheServerHangs(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "upload_interval_s", 60)
	f.uploadHang = true
	a := testAgent(t, f.url(), nil)
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatal(a.report())
	}
	t0 := time.Now()
	a.stop(time.Second)
	if d := time.Since(t0); d > 1600*time.Millisecond {
		t.Fatalf("stop took %v", d)
	}
	if a.holding.Load() {
		t.Fatal("still holding the profiler")
	}
}

func TestPollRateAtMostOnePerInterval(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1)
	f.setMode("fast304", nil, 0)
	testAgent(t, f.url(), nil)
	time.Sleep(3200 * time.Millisecond)
	ps := f.allPolls()
	if len(ps) < 2 || len(ps) > 4 {
		t.Fatalf("%d polls in 3.2 s", len(ps))
	}
	for i := 1; i < len(ps); i++ {
		if gap := ps[i].t.Sub(ps[i-1].t); gap < 900*time.Millisecond {
			t.Fatalf("gap %v", gap)
		}
	}
}

func TestChangeChurnRepollsAtMostOnceASecond(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1.5)
	f.setMode("churn", nil, 0)
	a := testAgent(t, f.url(), nil)
	time.Sleep(3800 * time.Millisecond)
	ps := f.allPolls()
	if len(ps) > 4 || len(ps) < 3 {
		t.Fatalf("%d polls", len(ps))
	}
	if gap := ps[1].t.Sub(ps[0].t); gap < 1400*time.Millisecond {
		t.Fatalf("first gap %v", gap)
	}
	for i := 2; i < len(ps); i++ {
		if gap := ps[i].t.Sub(ps[i-1].t); gap < 900*time.Millisecond || gap > 1300*time.Millisecond {
			t.Fatalf("gap %v", gap)
		}
	}
	if _, ok := ps[1].q["etag"]; !ok || !on(a) {
		t.Fatal(a.report())
	}
}

// After an outage (polls failing, an upload failed into a long backoff), the first valid poll
// ends the backoff: what is queued goes at once, not up to 60 s later (tests/faults found it).
func TestUploadBackoffEndsWhenTheServerIsBack(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "upload_interval_s", 0.3, "poll_interval_s", 1)
	var down atomic.Bool
	down.Store(true)
	f.uploadAnswer = func(map[string]string) int { return 503 - 302*boolInt(!down.Load()) }
	a := testAgent(t, f.url(), func(l *limits) {
		shortUploads(l)
		l.backoffMin, l.backoffMax = 30*time.Second, 30*time.Second
	})
	if !waitFor(5*time.Second, func() bool { return len(f.allUploads()) >= 1 }) {
		t.Fatal(a.report()) // 503: a 30 s backoff starts
	}
	f.setMode("status", nil, 500)
	n := len(f.allPolls())
	if !waitFor(3*time.Second, func() bool { return len(f.allPolls()) >= n+1 }) {
		t.Fatal("no failed poll")
	}
	down.Store(false)
	f.setMode("normal", nil, 0)
	t0 := time.Now()
	if !waitFor(5*time.Second, func() bool { return a.report().ProfilesSent >= 1 }) {
		t.Fatal(a.report())
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("sent %v after the server came back", d)
	}
}

// Uploads failing (5xx) while every poll is valid: polls do not cut the backoff short.
func TestUploadBackoffKeptWhilePollsStayValid(t *testing.T) {
	f := newFakeCP(t)
	f.setConfig("enabled", true, "upload_interval_s", 0.3, "poll_interval_s", 1)
	f.uploadAnswer = func(map[string]string) int { return 503 }
	a := testAgent(t, f.url(), func(l *limits) {
		shortUploads(l)
		l.backoffMin, l.backoffMax = 30*time.Second, 30*time.Second
	})
	if !waitFor(5*time.Second, func() bool { return len(f.allUploads()) >= 1 }) {
		t.Fatal(a.report())
	}
	n := len(f.allPolls())
	if !waitFor(4*time.Second, func() bool { return len(f.allPolls()) >= n+2 }) {
		t.Fatal("no valid polls")
	}
	if got := len(f.allUploads()); got != 1 || !on(a) {
		t.Fatalf("%d uploads while the backoff runs; %v", got, a.report())
	}
}
