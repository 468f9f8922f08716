// A fake RootTrace control plane and ingest endpoint (httptest on 127.0.0.1), honest or
// hostile on demand, and helpers shared by the tests.

package roottrace

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const bigBody = 50 << 20

type poll struct {
	t time.Time
	q map[string]string
}

type upload struct {
	t      time.Time
	q      map[string]string
	prof   *decoded
	answer int
}

// fakeCP: modes for GET /api/v1/sdk/config: normal (etag + held wait, 200/304), body (200
// with rawBody), huge (50 MB with Content-Length), hugeClose (50 MB, no length), drip
// (headers one byte at a time), status (answer code), reset (TCP RST), hang (never
// answer), churn (200 with a new etag at once), fast304 (304 at once, ignoring wait),
// codes (the next status of codes at once, the last one repeated).
type fakeCP struct {
	mu           sync.Mutex
	config       map[string]interface{}
	version      int
	changed      chan struct{} // closed and replaced on every config or mode change
	mode         string
	rawBody      []byte
	code         int
	codes        []int  // the "codes" mode's answers, one per poll; the last repeats
	coded        []poll // the polls the "codes" mode answered, in order
	polls        []poll
	uploads      []upload
	uploadAnswer func(q map[string]string) int
	uploadHang   bool
	release      chan struct{} // ends every hang and drip
	srv          *httptest.Server
}

func newFakeCP(t *testing.T) *fakeCP {
	f := &fakeCP{config: map[string]interface{}{"enabled": false, "type": "cpu",
		"sampling_interval_us": 10000, "upload_interval_s": 60, "max_stack_depth": 256,
		"poll_interval_s": 10}, version: 1, changed: make(chan struct{}), mode: "normal",
		code: 500, release: make(chan struct{})}
	f.uploadAnswer = func(map[string]string) int { return 201 }
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.close)
	return f
}

func (f *fakeCP) url() string { return f.srv.URL }

func (f *fakeCP) close() {
	close(f.release)
	f.srv.CloseClientConnections()
	f.srv.Close()
}

func (f *fakeCP) etag() string { return "v" + strconv.Itoa(f.version) }

func (f *fakeCP) bump() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeCP) setConfig(kv ...interface{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i+1 < len(kv); i += 2 {
		f.config[kv[i].(string)] = kv[i+1]
	}
	f.version++
	f.bump()
}

func (f *fakeCP) setMode(mode string, raw []byte, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.rawBody, f.code = mode, raw, code
	f.bump()
}

// setCodes makes the fake answer the next polls with codes, one each, the last one
// repeated until the mode changes.
func (f *fakeCP) setCodes(codes ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.codes = "codes", codes
	f.bump()
}

// codedPolls returns the polls the "codes" mode answered, in order.
func (f *fakeCP) codedPolls() []poll {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]poll(nil), f.coded...)
}

func (f *fakeCP) pollsSince(t0 time.Time) []poll {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []poll
	for _, p := range f.polls {
		if !p.t.Before(t0) {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakeCP) allPolls() []poll { return f.pollsSince(time.Time{}) }

func (f *fakeCP) allUploads() []upload {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]upload(nil), f.uploads...)
}

func flat(r *http.Request) map[string]string {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = v[0]
	}
	return q
}

func (f *fakeCP) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == "POST" {
		f.upload(w, r)
		return
	}
	q := flat(r)
	f.mu.Lock()
	f.polls = append(f.polls, poll{time.Now(), q})
	mode := f.mode
	f.mu.Unlock()
	f.answer(mode, w, r, q)
}

func (f *fakeCP) configBody() ([]byte, string) {
	c := map[string]interface{}{"etag": f.etag()}
	for k, v := range f.config {
		c[k] = v
	}
	b, _ := json.Marshal(c)
	return b, f.etag()
}

func (f *fakeCP) answer(mode string, w http.ResponseWriter, r *http.Request, q map[string]string) {
	switch mode {
	case "normal":
		f.normal(w, r, q)
	case "body":
		f.mu.Lock()
		b := f.rawBody
		f.mu.Unlock()
		w.Write(b)
	case "status", "codes":
		f.mu.Lock()
		code := f.code
		if mode == "codes" {
			f.coded = append(f.coded, poll{time.Now(), q})
			code = f.codes[0]
			if len(f.codes) > 1 {
				f.codes = f.codes[1:]
			}
		}
		f.mu.Unlock()
		w.WriteHeader(code)
		w.Write([]byte(`{"error":"boom","message":"boom"}`))
	case "huge":
		w.Header().Set("Content-Length", strconv.Itoa(bigBody))
		f.writeBig(w)
	case "hugeClose":
		f.raw(w, func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"))
			f.writeBig(c)
		})
	case "drip":
		f.raw(w, func(c net.Conn) {
			data := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + strings.Repeat("a", 10000)
			for i := range data {
				select {
				case <-f.release:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := c.Write([]byte{data[i]}); err != nil {
					return
				}
			}
		})
	case "reset":
		f.raw(w, func(c net.Conn) { c.(*net.TCPConn).SetLinger(0) })
	case "hang":
		select {
		case <-f.release:
		case <-r.Context().Done():
		}
	case "churn":
		f.mu.Lock()
		f.version++
		b, tag := f.configBody()
		f.mu.Unlock()
		w.Header().Set("ETag", tag)
		w.Write(b)
	case "fast304":
		f.mu.Lock()
		b, tag := f.configBody()
		f.mu.Unlock()
		if q["etag"] == tag {
			w.WriteHeader(304)
			return
		}
		w.Header().Set("ETag", tag)
		w.Write(b)
	}
}

// raw hijacks the connection, runs body on it, and closes it.
func (f *fakeCP) raw(w http.ResponseWriter, body func(net.Conn)) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	body(c)
}

func (f *fakeCP) writeBig(w io.Writer) {
	w.Write([]byte(`{"enabled": true, "pad": "`))
	chunk := []byte(strings.Repeat("a", 1<<20))
	for i := 0; i < bigBody/len(chunk); i++ {
		select {
		case <-f.release:
			return
		default:
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	w.Write([]byte(`"}`))
}

func (f *fakeCP) normal(w http.ResponseWriter, r *http.Request, q map[string]string) {
	wait, _ := strconv.ParseFloat(q["wait"], 64)
	end := time.After(time.Duration(wait * float64(time.Second)))
	for {
		f.mu.Lock()
		mode, tag, ch := f.mode, f.etag(), f.changed
		b, _ := f.configBody()
		f.mu.Unlock()
		if mode != "normal" {
			f.answer(mode, w, r, q)
			return
		}
		if q["etag"] != tag {
			w.Header().Set("ETag", tag)
			w.Write(b)
			return
		}
		select {
		case <-ch:
			continue
		case <-end:
		case <-f.release:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(304)
		return
	}
}

func (f *fakeCP) upload(w http.ResponseWriter, r *http.Request) {
	q := flat(r)
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	hang, answerFn := f.uploadHang, f.uploadAnswer
	f.mu.Unlock()
	if hang {
		select {
		case <-f.release:
		case <-r.Context().Done():
		}
		return
	}
	code := answerFn(q)
	prof, err := decodeProfile(body)
	if err != nil {
		code = 400
	}
	f.mu.Lock()
	f.uploads = append(f.uploads, upload{time.Now(), q, prof, code})
	f.mu.Unlock()
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"id":"1","service":%q,"type":"cpu"}`, q["service"])
}

// decoded is a pprof profile as the tests look at it.
type decoded struct {
	sampleTypes [][2]string
	periodType  string
	samples     []sample // stacks leaf first
	timeNanos   int64
	durNanos    int64
	period      int64
}

// decodeProfile decodes a gzipped canonical (or any) pprof profile.
func decodeProfile(body []byte) (*decoded, error) {
	raw, err := gunzipLimited(body, 256<<20)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != 0x1f {
		return nil, fmt.Errorf("not gzip")
	}
	p, err := parsePprof(raw)
	if err != nil {
		return nil, err
	}
	d := &decoded{timeNanos: p.timeNanos, durNanos: p.durNanos, period: p.period}
	for _, vt := range p.sampleTypes {
		d.sampleTypes = append(d.sampleTypes, [2]string{p.str(vt[0]), p.str(vt[1])})
	}
	for _, s := range p.samples {
		var frames []string
		for _, l := range s.locs {
			frames = p.frameNames(l, frames)
		}
		var c, v int64
		if len(s.values) >= 2 {
			c, v = int64(s.values[0]), int64(s.values[len(s.values)-1])
		}
		d.samples = append(d.samples, sample{stack: frames, count: c, value: v})
	}
	return d, nil
}

// functions returns the set of frame names in d.
func (d *decoded) functions() map[string]bool {
	out := map[string]bool{}
	for _, s := range d.samples {
		for _, f := range s.stack {
			out[f] = true
		}
	}
	return out
}

// testAgent starts an agent against url with the compiled limits changed by mod; it is
// stopped at the end of the test.
func testAgent(t *testing.T, url string, mod func(*limits), opts ...Options) *agent {
	t.Helper()
	lim := defaultLimits()
	if mod != nil {
		mod(&lim)
	}
	o := Options{Server: url, Key: "test-key", Service: "svc", Version: "1.0"}
	if len(opts) > 0 {
		o = opts[0]
		o.Server = url
		if o.Key == "" {
			o.Key = "test-key"
		}
	}
	a, err := newAgentFromOptions(o, lim)
	if err != nil {
		t.Fatal(err)
	}
	a.start()
	t.Cleanup(func() { a.stop(2 * time.Second) })
	return a
}

// waitFor polls cond every 10 ms until true or timeout; returns its last value.
func waitFor(timeout time.Duration, cond func() bool) bool {
	end := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// on reports whether a is profiling with status "profiling".
func on(a *agent) bool {
	return a.profiling.Load() && a.holding.Load() && a.report().State == StateProfiling
}

// burn spins the CPU for d.
//
//go:noinline
func burnCPU(d time.Duration) uint64 {
	end := time.Now().Add(d)
	var x uint64 = 1
	for time.Now().Before(end) {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}
