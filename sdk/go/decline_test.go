// The SDK declines when someone else holds Go's CPU profiler (net/http/pprof, go test
// -cpuprofile), never stops a profile it did not start, and with a duty cycle leaves the
// profiler free for the application part of the time.

package roottrace

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	pprofhttp "net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

const declined = "declined: CPU profiler in use"

// appPprof is the application's own /debug/pprof/profile.
func appPprof(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprofhttp.Profile)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// fetchProfile asks the application's /debug/pprof/profile for a profile of `seconds`.
func fetchProfile(url string, seconds int) (int, []byte, error) {
	resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", url, seconds))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// checkCPUProfile checks that b is a complete, valid runtime/pprof CPU profile of at
// least minDur.
func checkCPUProfile(t *testing.T, b []byte, minDur time.Duration) *decoded {
	t.Helper()
	d, err := decodeProfile(b)
	if err != nil {
		t.Fatalf("invalid profile: %v", err)
	}
	if len(d.sampleTypes) != 2 || d.sampleTypes[1] != [2]string{"cpu", "nanoseconds"} || d.durNanos < int64(minDur) {
		t.Fatalf("profile %+v (duration %v, want >= %v)", d.sampleTypes, time.Duration(d.durNanos), minDur)
	}
	return d
}

func polledWith(f *fakeCP, status string) bool {
	for _, p := range f.allPolls() {
		if p.q["status"] == status {
			return true
		}
	}
	return false
}

func TestDeclinesWhileNetHTTPPprofProfiles(t *testing.T) {
	app := appPprof(t)
	type result struct {
		code int
		body []byte
		err  error
	}
	got := make(chan result, 1)
	go func() {
		c, b, err := fetchProfile(app.URL, 3)
		got <- result{c, b, err}
	}()
	time.Sleep(400 * time.Millisecond) // the handler holds the profiler
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1)
	a := testAgent(t, f.url(), nil)
	if !waitFor(2500*time.Millisecond, func() bool { return a.report().Status == declined && polledWith(f, declined) }) {
		t.Fatalf("%+v", a.report())
	}
	burnCPU(300 * time.Millisecond)
	r := <-got
	if r.err != nil || r.code != 200 {
		t.Fatalf("the application's profile: %d %v %s", r.code, r.err, r.body)
	}
	// Complete: the SDK never stopped it (it would have ended early).
	d := checkCPUProfile(t, r.body, 2900*time.Millisecond)
	if !d.functions()[pkgPath+".burnCPU"] {
		t.Fatal("the application's profile lacks the test's work")
	}
	if a.starts.Load() != 0 {
		t.Fatalf("%d profiles started while declined", a.starts.Load())
	}
	// Once the profiler is free, the SDK takes it at its next try (a poll interval).
	if !waitFor(2500*time.Millisecond, func() bool { return on(a) }) {
		t.Fatalf("%+v", a.report())
	}
}

// Run as a subprocess under -test.cpuprofile (what `go test -cpuprofile` passes).
func TestHelperUnderCPUProfile(t *testing.T) {
	if os.Getenv("ROOTTRACE_CPUPROFILE_HELPER") != "1" {
		t.Skip("helper of TestDeclinesUnderGoTestCPUProfile")
	}
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1)
	a := testAgent(t, f.url(), nil)
	ok := waitFor(3*time.Second, func() bool { return a.report().Status == declined && polledWith(f, declined) })
	burnCPU(300 * time.Millisecond)
	a.stop(2 * time.Second)
	fmt.Printf("HELPER declined=%v starts=%d uploads=%d\n", ok, a.starts.Load(), len(f.allUploads()))
}

func TestDeclinesUnderGoTestCPUProfile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cpu.out")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperUnderCPUProfile$", "-test.v",
		"-test.count=1", "-test.cpuprofile="+out)
	cmd.Env = append(os.Environ(), "ROOTTRACE_CPUPROFILE_HELPER=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if !strings.Contains(string(b), "HELPER declined=true starts=0 uploads=0") {
		t.Fatalf("%s", b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	d := checkCPUProfile(t, data, 300*time.Millisecond)
	if !d.functions()[pkgPath+".burnCPU"] {
		t.Fatal("the -cpuprofile file lacks the helper's work")
	}
}

func TestDutyCycleLeavesTheProfilerFree(t *testing.T) {
	app := appPprof(t)
	f := newFakeCP(t)
	f.setConfig("enabled", true, "poll_interval_s", 1)
	a := testAgent(t, f.url(), nil, Options{Service: "svc", DutyCycle: DutyCycle{On: time.Second, Every: 2500 * time.Millisecond}})
	if !waitFor(3*time.Second, func() bool { return on(a) }) {
		t.Fatalf("%+v", a.report())
	}
	if s := a.report().Status; s != "profiling: duty cycle 1s every 2.5s" {
		t.Fatal(s)
	}
	// While the SDK holds the profiler, the application's own profile fails (500).
	if code, body, _ := fetchProfile(app.URL, 1); code != 500 || !strings.Contains(string(body), "already in use") {
		t.Fatalf("during the on part: %d %s", code, body)
	}
	// In the off part it succeeds, complete.
	if !waitFor(2*time.Second, func() bool { return !a.holding.Load() }) || !a.profiling.Load() {
		t.Fatalf("%+v", a.report())
	}
	code, body, err := fetchProfile(app.URL, 1)
	if err != nil || code != 200 {
		t.Fatalf("during the off part: %d %v %s", code, err, body)
	}
	checkCPUProfile(t, body, 900*time.Millisecond)
	// The SDK profiles again in the next period; each profile covers the on part.
	if !waitFor(3*time.Second, func() bool { return a.holding.Load() }) {
		t.Fatalf("%+v", a.report())
	}
	ups := f.allUploads()
	if len(ups) < 1 || ups[0].prof.durNanos < 950e6 || ups[0].prof.durNanos > 1500e6 {
		t.Fatalf("%d uploads", len(ups))
	}
	if a.report().State != StateProfiling {
		t.Fatalf("%+v", a.report())
	}
}

// The poll sent right after a change carries the status that follows from it: turned on
// while the application holds the CPU profiler, the re-poll says declined, not profiling.
func TestRepollAfterChangeCarriesTheNewStatus(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("CPU profiler in use (go test -cpuprofile?)")
	}
	defer pprof.StopCPUProfile()
	f := newFakeCP(t)
	f.setConfig("enabled", false, "poll_interval_s", 3)
	a := testAgent(t, f.url(), func(l *limits) { l.repollMin = 0 })
	// The second poll is held (etag, wait=3); the change ends it.
	if !waitFor(5*time.Second, func() bool { return len(f.allPolls()) >= 2 }) {
		t.Fatalf("%d polls", len(f.allPolls()))
	}
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	f.setConfig("enabled", true)
	if !waitFor(2*time.Second, func() bool { return len(f.pollsSince(t0)) >= 1 }) {
		t.Fatalf("no re-poll: %+v", a.report())
	}
	if got := f.pollsSince(t0)[0].q["status"]; got != declined {
		t.Fatalf("re-poll sent status %q, want %q", got, declined)
	}
	if a.report().Status != declined || a.starts.Load() != 0 {
		t.Fatalf("%+v, %d starts", a.report(), a.starts.Load())
	}
	// Turned off again: the re-poll says disabled.
	t1 := time.Now()
	f.setConfig("enabled", false)
	if !waitFor(2*time.Second, func() bool { return len(f.pollsSince(t1)) >= 1 }) {
		t.Fatalf("no re-poll: %+v", a.report())
	}
	if got := f.pollsSince(t1)[0].q["status"]; got != "disabled" {
		t.Fatalf("re-poll sent status %q", got)
	}
}
