// Config: the bounds compiled into the SDK, and validation and clamping of what the
// control plane sends (DESIGN.md §5, docs/control-plane.md).

package roottrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Go's CPU profiler samples at a fixed 100 Hz (runtime/pprof's StartCPUProfile; the SDK
// never calls runtime.SetCPUProfileRate), so the effective interval is always this,
// whatever the config asks; the configured interval only shows in the status. A property
// of the runtime, not a bound: it is not in limits.
const goSamplingIntervalUS = 10000

// limits holds the clamp bounds and the timings that depend on them. Whatever the server
// says, these hold: a spoofed or broken control plane cannot make the SDK spin, flood the
// network or grow without bound. Each value is written once, in defaultLimits; tests may
// use a copy with shorter bounds, the SDK itself always uses defaultLimits().
type limits struct {
	samplingIntervalMinUS int64         // lowest configured interval reported, us
	samplingIntervalMaxUS int64         // highest configured interval reported, us
	uploadIntervalMin     time.Duration // shortest profile
	uploadIntervalMax     time.Duration // longest profile
	stackDepthMin         int           // fewest frames kept
	stackDepthMax         int           // most frames kept (leaf side)
	pollIntervalMin       time.Duration // most frequent poll
	pollIntervalMax       time.Duration // least frequent poll
	uploadMaxBytes        int           // compressed upload size
	configMaxBytes        int64         // config answer size
	etagMaxLen            int           // etag characters sent back
	repollMin             time.Duration // gap after a change-return
	pollWaitMax           time.Duration // longest held poll asked for
	requestSlack          time.Duration // poll deadline beyond `wait`
	connectTimeout        time.Duration // TCP connect
	uploadDeadline        time.Duration // whole upload request
	maxStacks             int           // distinct stacks in a profile
	queueMax              int           // queued profiles
	backoffMin            time.Duration // first retry delay
	backoffMax            time.Duration // longest retry delay
	flushTimeout          time.Duration // longest flush
	dutyOnMin             time.Duration // shortest duty-cycle "on" part
	defaultDuty           DutyCycle     // the zero DutyCycle's cycle, while the heap is at its minimum
	heapMinimum           uint64        // the GC's minimum heap goal at GOGC=100 (heap.go)
	heapReadEvery         time.Duration // between reads of the heap goal while profiling
	defaultUpload         time.Duration // upload interval when the config leaves it out
	defaultPoll           time.Duration // poll interval before a config, or when left out
}

// defaultLimits returns the compiled bounds (DESIGN §5, docs/control-plane.md); the one
// place each is written.
func defaultLimits() limits {
	return limits{
		// The server accepts a sampling interval of 1 ms to 1 s; the configured value is
		// clamped to that before it is reported (Go samples at goSamplingIntervalUS).
		samplingIntervalMinUS: 1000,
		samplingIntervalMaxUS: 1000000,
		// Upload interval 10-300 s: at most one upload per 10 s per instance keeps the
		// server's ingest load bounded; more than 5 min between uploads loses too much on
		// a crash.
		uploadIntervalMin: 10 * time.Second,
		uploadIntervalMax: 300 * time.Second,
		// Stack depth at most 256 frames (leaf side kept): bounds the profile's size.
		stackDepthMin: 1,
		stackDepthMax: 256,
		// Poll interval 1-600 s: at most one config request a second; a config still
		// arrives at least every 10 minutes, and the 3-interval fail-closed rule then
		// still acts.
		pollIntervalMin: 1 * time.Second,
		pollIntervalMax: 600 * time.Second,
		// Upload body at most 4 MiB compressed: the server takes 16 MiB, an SDK stays
		// under.
		uploadMaxBytes: 4 << 20,
		// A config is ~200 bytes; an answer larger than this is refused without reading it.
		configMaxBytes: 64 << 10,
		// An etag is sent back in every poll's query: at most this many characters, each
		// printable ASCII but '"' (RFC 9110's etagc without obs-text). The server's are 64
		// hex digits; a longer one (up to the 64 KiB body) makes the server refuse every
		// later poll with 414, and the SDK would stay off for good.
		etagMaxLen: 256,
		// After a held poll returns because of a change, poll again at once, but never
		// more often than once a second (docs/control-plane.md).
		repollMin: 1 * time.Second,
		// The server holds a poll at most 30 s; we ask for the poll interval, at most this.
		pollWaitMax: 30 * time.Second,
		// A poll gets `wait` plus this long to answer in full (headers and body): a slow
		// drip cannot hold the poller longer.
		requestSlack: 10 * time.Second,
		// Uploads: connect timeout and whole-request deadline.
		connectTimeout: 5 * time.Second,
		uploadDeadline: 30 * time.Second,
		// Distinct stacks in one profile: bounds conversion memory; the lightest stacks
		// beyond it are counted under one "(trimmed)" stack.
		maxStacks: 20000,
		// Profiles kept while the server is away (oldest dropped first): bounds memory.
		queueMax: 8,
		// Retry backoff for 5xx and network errors: doubles from the first to the last
		// value.
		backoffMin: 1 * time.Second,
		backoffMax: 60 * time.Second,
		// Stop() flushes for at most this long (DESIGN §5).
		flushTimeout: 5 * time.Second,
		// The shortest "on" part of a duty cycle: a shorter profile holds too few samples.
		dutyOnMin: 1 * time.Second,
		// The zero DutyCycle profiles back to back, except while the GC's heap goal sits
		// near its minimum (heap.go): there 5 s of every minute, which brings work_go's +6 %
		// CPU under 1 % (docs/performance-sdk.md, *SDK overhead*).
		defaultDuty:   DutyCycle{On: 5 * time.Second, Every: time.Minute},
		heapMinimum:   4 << 20, // runtime/mgcpacer.go: defaultHeapMinimum (4 MiB)
		heapReadEvery: 500 * time.Millisecond,
		// Defaults the server would send for runtime=go, for fields a config leaves out.
		defaultUpload: 60 * time.Second,
		defaultPoll:   10 * time.Second,
	}
}

// remoteConfig is a valid, clamped config from the control plane.
type remoteConfig struct {
	enabled            bool          // profiling on for this service
	ptype              string        // the type the operator asked for ("cpu", "wall", ...)
	samplingIntervalUS int64         // as asked (reported only: Go samples at 100 Hz)
	uploadInterval     time.Duration // clamped profile length
	maxStackDepth      int           // clamped stack depth
	pollInterval       time.Duration // clamped poll interval
	etag               string        // the config's version, sent back on the next poll
}

// errConfig marks a config answer that is invalid as a whole.
var errConfig = errors.New("invalid config")

func configErrorf(format string, args ...interface{}) error {
	return fmt.Errorf("%w: %s", errConfig, fmt.Sprintf(format, args...))
}

// number returns field key as a float64, def when absent; an error for a wrong type.
// JSON has no NaN or Infinity, so encoding/json refuses them as malformed.
func number(obj map[string]json.RawMessage, key string, def float64) (float64, error) {
	raw, ok := obj[key]
	if !ok {
		return def, nil
	}
	var v interface{}
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, configErrorf("%s: %v", key, err)
	}
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, configErrorf("%s is not a number", key)
	}
	return f, nil
}

// clampDuration converts seconds to a duration within [lo, hi] without overflow.
func clampDuration(seconds float64, lo, hi time.Duration) time.Duration {
	if seconds <= lo.Seconds() {
		return lo
	}
	if seconds >= hi.Seconds() {
		return hi
	}
	return time.Duration(seconds * float64(time.Second))
}

func clampFloat(v, lo, hi float64) float64 {
	return math.Min(math.Max(v, lo), hi)
}

// unquoteETag returns an ETag header's opaque value: `W/"abc"` and `"abc"` give `abc`.
func unquoteETag(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v
}

// validETag reports whether v can be sent back as a poll's etag: at most maxLen printable
// ASCII characters but '"' (see limits.etagMaxLen); "" is no etag.
func validETag(v string, maxLen int) bool {
	if len(v) > maxLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e || v[i] == '"' {
			return false
		}
	}
	return true
}

// parseConfig validates and clamps a config answer (a JSON object). Out-of-range numbers
// are clamped to the nearest bound; a wrong type, NaN, a body over the size cap or
// malformed JSON returns an error wrapping errConfig: the whole config is then invalid.
func parseConfig(body []byte, lim limits, headerETag string) (remoteConfig, error) {
	var c remoteConfig
	if int64(len(body)) > lim.configMaxBytes {
		return c, configErrorf("config larger than %d bytes", lim.configMaxBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		msg := err.Error()
		if len(msg) > 80 {
			msg = msg[:80]
		}
		return c, configErrorf("malformed JSON: %s", msg)
	}
	if obj == nil {
		return c, configErrorf("config is not a JSON object")
	}
	raw, ok := obj["enabled"]
	if !ok {
		return c, configErrorf("enabled is missing")
	}
	if err := json.Unmarshal(raw, &c.enabled); err != nil || bytes.Equal(raw, []byte("null")) {
		return c, configErrorf("enabled is not a boolean")
	}
	c.ptype = "cpu"
	if raw, ok := obj["type"]; ok {
		if json.Unmarshal(raw, &c.ptype) != nil || bytes.Equal(raw, []byte("null")) {
			return c, configErrorf("type is not a string")
		}
		// encoding/json turns a lone surrogate (or invalid UTF-8) into U+FFFD: refused, as
		// every SDK does (sdk/testdata/config_fuzz/invalid-lone-surrogate-*)
		if strings.ContainsRune(c.ptype, utf8.RuneError) {
			return c, configErrorf("type is not valid Unicode (a lone surrogate)")
		}
	}
	if c.etag = unquoteETag(headerETag); !validETag(c.etag, lim.etagMaxLen) {
		c.etag = "" // a malformed header is ignored: the next poll asks without etag
	}
	if raw, ok := obj["etag"]; ok {
		if json.Unmarshal(raw, &c.etag) != nil || bytes.Equal(raw, []byte("null")) {
			return c, configErrorf("etag is not a string")
		}
		if !validETag(c.etag, lim.etagMaxLen) {
			return c, configErrorf("etag is not at most %d printable ASCII characters",
				lim.etagMaxLen)
		}
	}
	interval, err := number(obj, "sampling_interval_us", goSamplingIntervalUS)
	if err != nil {
		return c, err
	}
	upload, err := number(obj, "upload_interval_s", lim.defaultUpload.Seconds())
	if err != nil {
		return c, err
	}
	depth, err := number(obj, "max_stack_depth", float64(lim.stackDepthMax))
	if err != nil {
		return c, err
	}
	poll, err := number(obj, "poll_interval_s", lim.defaultPoll.Seconds())
	if err != nil {
		return c, err
	}
	// Clamped to what the server accepts (only reported in Go).
	c.samplingIntervalUS = int64(math.Round(clampFloat(interval,
		float64(lim.samplingIntervalMinUS), float64(lim.samplingIntervalMaxUS))))
	c.uploadInterval = clampDuration(upload, lim.uploadIntervalMin, lim.uploadIntervalMax)
	c.maxStackDepth = int(clampFloat(depth, float64(lim.stackDepthMin), float64(lim.stackDepthMax)))
	c.pollInterval = clampDuration(poll, lim.pollIntervalMin, lim.pollIntervalMax)
	return c, nil
}
