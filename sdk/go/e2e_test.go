// End to end against the real server binary (ROOTTRACE_BIN, default build/roottrace at
// the repository root): an ingest key, profiling turned on from the API, the SDK in this
// test process, the CPU profile it uploaded, a toggle off, and a declined status.

package roottrace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"
)

const e2eAdmin = "e2e-admin-token-0123456789"

//go:noinline
func e2eBusyChecksum(d time.Duration) uint64 { return burnCPU(d) }

type e2eServer struct {
	url string
	t   *testing.T
}

func startServer(t *testing.T) *e2eServer {
	bin := os.Getenv("ROOTTRACE_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../../build/roottrace")
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("ROOTTRACE_E2E_REQUIRED") == "1" {
			t.Fatalf("no server binary at %s (run make at the repository root)", bin)
		}
		t.Skipf("no server binary at %s (run make at the repository root)", bin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	log, _ := os.Create(filepath.Join(dir, "server.log"))
	cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data"), "--listen", addr, "--poll-interval", "1s")
	cmd.Env = append(os.Environ(), "ROOTTRACE_BOOTSTRAP_TOKEN="+e2eAdmin)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
	})
	s := &e2eServer{url: "http://" + addr, t: t}
	if !waitFor(20*time.Second, func() bool {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}) {
		b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		t.Fatalf("server did not become healthy: %s", b)
	}
	return s
}

// call sends an admin request and decodes a JSON answer into out (when not nil).
func (s *e2eServer) call(method, path string, body interface{}, out interface{}) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+e2eAdmin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && json.Unmarshal(b, out) != nil {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

func (s *e2eServer) toggle(service string, enabled bool) {
	var out struct {
		Enabled bool `json:"profiling_enabled"`
	}
	body := map[string]interface{}{"enabled": enabled, "upload_interval_s": 10}
	if c := s.call("PUT", "/api/v1/services/"+service+"/profiling", body, &out); c != 200 || out.Enabled != enabled {
		s.t.Fatalf("toggle %s: %d", service, c)
	}
}

// instanceStatus returns the status the server shows for an instance, "" when unknown.
func (s *e2eServer) instanceStatus(service, instance string) (status, runtime, sdk string) {
	var svcs []struct {
		Name      string `json:"name"`
		Instances []struct {
			Instance   string `json:"instance"`
			Runtime    string `json:"runtime"`
			SDKVersion string `json:"sdk_version"`
			Status     string `json:"status"`
		} `json:"instances"`
	}
	s.call("GET", "/api/v1/services", nil, &svcs)
	for _, sv := range svcs {
		for _, in := range sv.Instances {
			if sv.Name == service && in.Instance == instance {
				return in.Status, in.Runtime, in.SDKVersion
			}
		}
	}
	return "", "", ""
}

func TestEndToEndAgainstTheRealServer(t *testing.T) {
	s := startServer(t)
	var key struct {
		Key string `json:"key"`
	}
	if c := s.call("POST", "/api/v1/keys", map[string]string{"scope": "ingest", "name": "e2e-go"}, &key); c != 201 {
		t.Fatalf("key: %d", c)
	}
	const svc = "e2e-go"
	s.toggle(svc, true)
	a := testAgent(t, s.url, nil, Options{Service: svc, Key: key.Key, Version: "1.2.3"})
	if !waitFor(5*time.Second, func() bool { return on(a) }) {
		t.Fatalf("%+v", a.report())
	}
	// Busy until the first upload (the server's 10 s upload interval) is stored.
	if !waitFor(20*time.Second, func() bool { e2eBusyChecksum(100 * time.Millisecond); return a.report().ProfilesSent >= 1 }) {
		t.Fatalf("%+v", a.report())
	}
	var prof struct {
		Type      string `json:"type"`
		Profiles  int    `json:"profiles"`
		Functions []struct {
			Name   string `json:"name"`
			SelfNs int64  `json:"self_ns"`
		} `json:"functions"`
	}
	q := url.Values{"service": {svc}, "type": {"cpu"}}
	if c := s.call("GET", "/api/v1/profile?"+q.Encode(), nil, &prof); c != 200 || prof.Type != "cpu" || prof.Profiles < 1 {
		t.Fatalf("%d %+v", c, prof)
	}
	names := map[string]int64{}
	for _, f := range prof.Functions {
		names[f.Name] = f.SelfNs
	}
	if names[pkgPath+".burnCPU"] < 1e9 { // ~10 s busy; at least 1 s of CPU on a loaded host
		t.Fatalf("busy function: %d ns; functions %v", names[pkgPath+".burnCPU"], names)
	}
	if _, ok := names[pkgPath+".e2eBusyChecksum"]; !ok {
		t.Fatalf("no e2eBusyChecksum frame: %v", names)
	}
	if st, rt, sdk := s.instanceStatus(svc, a.opts.Instance); st != "profiling" || rt != "go" || sdk != SDKVersion {
		t.Fatalf("instance %q %q %q", st, rt, sdk)
	}
	// Toggle off: profiling stops within a held poll, and nothing more is uploaded.
	s.toggle(svc, false)
	if !waitFor(4*time.Second, func() bool { return !a.holding.Load() && a.report().Status == "disabled" }) {
		t.Fatalf("%+v", a.report())
	}
	if !waitFor(4*time.Second, func() bool { st, _, _ := s.instanceStatus(svc, a.opts.Instance); return st == "disabled" }) {
		t.Fatal("the server never saw status disabled")
	}
	sent := a.report().ProfilesSent
	e2eBusyChecksum(1500 * time.Millisecond)
	if r := a.report(); r.ProfilesSent != sent || r.ProfilesQueued != 0 || a.holding.Load() {
		t.Fatalf("%+v", r)
	}
	a.stop(2 * time.Second)

	// Someone else holds the profiler: the server shows the instance as declined.
	var mine bytes.Buffer
	if err := pprof.StartCPUProfile(&mine); err != nil {
		t.Fatal(err)
	}
	defer pprof.StopCPUProfile()
	s.toggle(svc+"-declined", true)
	b := testAgent(t, s.url, nil, Options{Service: svc + "-declined", Key: key.Key})
	if !waitFor(5*time.Second, func() bool {
		st, _, _ := s.instanceStatus(svc+"-declined", b.opts.Instance)
		return st == declined
	}) {
		t.Fatalf("%+v", b.report())
	}
	if b.starts.Load() != 0 {
		t.Fatal("started a profile while declined")
	}
	fmt.Println("e2e: declined status reached the server")
}
