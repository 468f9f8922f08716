// Package roottrace is the Go SDK of RootTrace, a self-hosted continuous profiler: CPU
// profiles from runtime/pprof, uploaded to a RootTrace server while an operator has
// profiling turned on for the service (docs/sdk/go.md).
//
//	err := roottrace.Start(roottrace.Options{
//		Server: "http://roottrace:4040", Key: "rt_...", Service: "checkout", Version: "1.4.2",
//	})
//	defer roottrace.Stop(5 * time.Second)
//
// Nothing here panics into the application or blocks its goroutines; problems show in
// Status(). Go's CPU profiler is process-wide: while the SDK profiles, the application's
// own pprof.StartCPUProfile (and /debug/pprof/profile) fails; see Options.DutyCycle.
package roottrace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// SDKVersion is this SDK's version, sent as sdk_version.
const SDKVersion = "0.1.0"

// runtimeName is sent as runtime.
const runtimeName = "go"

// nameMaxBytes is the server's limit on service and instance names, in UTF-8 bytes.
const nameMaxBytes = 200

func runtimeVersion() string { return runtime.Version() }

// Options holds the options of Start (docs/sdk/README.md, "One vocabulary": what the user
// passes to start; what the server sends is the config).
type Options struct {
	// Server is the RootTrace server's base URL, e.g. "http://roottrace:4040".
	// Empty: the environment variable ROOTTRACE_SERVER.
	Server string
	// Key is an ingest key. Empty: the environment variable ROOTTRACE_KEY.
	Key string
	// Service is the service's name (required): 1-200 bytes of UTF-8, no control
	// characters, no '/'.
	Service string
	// Instance names this process. Empty: "<hostname>-<pid>-<4 random hex>".
	Instance string
	// Version is the service's release (e.g. "1.4.2"); the server records a deploy when
	// it changes. Optional.
	Version string
	// DutyCycle, when set, holds the CPU profiler only part of the time, so that the
	// application's own /debug/pprof/profile works in the rest. Continuous: profiles back
	// to back, the profiler always held while profiling is on. Zero (the default): back to
	// back, except while the GC's heap goal sits near its minimum (4 MiB x GOGC/100), where
	// Go's profiler costs ~6 % CPU (its 1.1 MiB buffer takes a third of the GC's room): there
	// 5 s of every minute, and the status says so. The heap decides at the end of each
	// profile, so each start begins with a 5 s profile (heap.go; docs/sdk/go.md, "Cost"). An
	// invalid one (see DutyCycle) makes Start return an error.
	DutyCycle DutyCycle
}

// Config is Options under its former name, kept for one release so that existing code
// compiles (sdk/go/CHANGELOG.md).
//
// Deprecated: use Options.
type Config = Options

// DutyCycle profiles for On at the start of every period Every, and leaves Go's CPU
// profiler free for the rest (e.g. On: 10 * time.Second, Every: time.Minute). The zero
// value is the default that Options.DutyCycle describes; Continuous profiles back to back.
// Otherwise On must be positive (a shorter On than 1 s is made 1 s) and Every longer than
// On: Start refuses anything else (a negative or missing On, Every not longer than On) with
// an error, and does not profile. Capacity estimates stay right: the server counts config
// polls as liveness (DESIGN §7).
type DutyCycle struct {
	On    time.Duration // profiling part of each period
	Every time.Duration // length of the period

	continuous bool // Continuous
}

// Continuous, as Options.DutyCycle, profiles back to back whatever the heap: what the zero
// DutyCycle did until the adaptive default (sdk/go/CHANGELOG.md).
var Continuous = DutyCycle{continuous: true}

// active reports whether the duty cycle leaves an off part.
func (d DutyCycle) active() bool { return d.On > 0 && d.Every > d.On }

// StatusInfo is the SDK's state as Status reports it.
type StatusInfo struct {
	Status          string `json:"status"`           // "<state>[: <reason>]", as sent to the server
	State           string `json:"state"`            // profiling, disabled, waiting, unavailable, declined or error
	Reason          string `json:"reason"`           // the part after "state: ", or ""
	IntervalUS      int64  `json:"interval_us"`      // effective sampling interval, microseconds (Go: always 10000)
	Service         string `json:"service"`          // service name
	Instance        string `json:"instance"`         // instance name
	ProfilesSent    int64  `json:"profiles_sent"`    // profiles the server stored
	ProfilesDropped int64  `json:"profiles_dropped"` // profiles given up (queue full, 4xx, 409)
	ProfilesQueued  int    `json:"profiles_queued"`  // profiles waiting for upload
	Samples         int64  `json:"samples"`          // samples (10 ms of CPU each) in the profiles made so far
	LastError       string `json:"last_error"`       // the last problem seen, "" if none
}

var (
	mu      sync.Mutex
	current *agent
	failed  string // the status of the last Start that failed, until the next Start
)

// ErrAlreadyStarted is returned by Start while an SDK instance is running.
var ErrAlreadyStarted = errors.New("roottrace: already started")

// Start starts the SDK: it polls the server's control plane and profiles while it says
// so. It returns at once (nothing waits on the network) and an error only for invalid
// options, which Status() then reports too; call Stop before the process exits to
// upload the profile in progress.
func Start(o Options) error {
	return startWith(o, defaultLimits())
}

// startWith is Start with given limits (tests may shorten them).
func startWith(o Options, lim limits) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("roottrace: internal error: %v", r)
		}
	}()
	mu.Lock()
	defer mu.Unlock()
	if current != nil && current.state.Load() == stateRunning {
		return ErrAlreadyStarted
	}
	a, err := newAgentFromOptions(o, lim)
	if err != nil {
		current, failed = nil, formatStatus(StateError, err.Error())
		return fmt.Errorf("roottrace: %w", err)
	}
	current, failed = a, ""
	a.start()
	return nil
}

// newAgentFromOptions normalizes o (environment fallbacks, default instance), checks it,
// and returns an agent not yet started.
func newAgentFromOptions(o Options, lim limits) (*agent, error) {
	if o.Server == "" {
		o.Server = os.Getenv("ROOTTRACE_SERVER")
	}
	if o.Key == "" {
		o.Key = os.Getenv("ROOTTRACE_KEY")
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"server", o.Server}, {"key", o.Key}, {"service", o.Service}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing option: %s", strings.Join(missing, ", "))
	}
	if p := nameProblem(o.Service); p != "" {
		return nil, fmt.Errorf("invalid service name (%s)", p)
	}
	if o.Instance == "" {
		o.Instance = makeInstanceID()
	} else if p := nameProblem(o.Instance); p != "" {
		return nil, fmt.Errorf("invalid instance name (%s)", p)
	}
	if d := &o.DutyCycle; *d != (DutyCycle{}) && *d != Continuous {
		on := d.On
		if on > 0 && on < lim.dutyOnMin {
			on = lim.dutyOnMin
		}
		if on <= 0 || d.Every <= on {
			return nil, fmt.Errorf("invalid duty cycle (On %gs, Every %gs): On must be positive (at least %gs is used) and Every longer than On",
				d.On.Seconds(), d.Every.Seconds(), lim.dutyOnMin.Seconds())
		}
		d.On = on
	}
	return newAgent(o, lim)
}

// Stop stops profiling, uploads the profile in progress and what is queued, and waits
// at most timeout (never more than 5 s). Safe to call when not started, and more than
// once.
func Stop(timeout time.Duration) {
	defer func() { _ = recover() }()
	mu.Lock()
	a := current
	mu.Unlock()
	if a != nil {
		a.stop(timeout)
	}
}

// Status returns the SDK's state: the status string sent to the server, the effective
// sampling interval, and counters of profiles sent, dropped and queued.
func Status() (s StatusInfo) {
	defer func() {
		if r := recover(); r != nil {
			f := formatStatus(StateError, fmt.Sprint("status: ", r))
			_, reason := splitStatus(f)
			s = StatusInfo{Status: f, State: StateError, Reason: reason,
				IntervalUS: goSamplingIntervalUS, LastError: f}
		}
	}()
	mu.Lock()
	a, f := current, failed
	mu.Unlock()
	if a == nil {
		last := f // the status of a Start that failed is the last problem seen
		if f == "" {
			f = formatStatus(StateDisabled, "not started")
		}
		state, reason := splitStatus(f)
		return StatusInfo{Status: f, State: state, Reason: reason, IntervalUS: goSamplingIntervalUS,
			LastError: last}
	}
	return a.report()
}

// splitStatus splits "state: reason".
func splitStatus(s string) (state, reason string) {
	if i := strings.Index(s, ": "); i >= 0 {
		return s[:i], s[i+2:]
	}
	return s, ""
}

// nameProblem returns "" when the server accepts name as a service or instance name,
// else why not.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case !utf8.ValidString(name):
		return "not valid UTF-8"
	case len(name) > nameMaxBytes:
		return fmt.Sprintf("%d bytes, at most %d", len(name), nameMaxBytes)
	}
	for _, r := range name {
		if r == '/' {
			return "contains '/'"
		}
		if r < 0x20 || r == 0x7f {
			return fmt.Sprintf("control character U+%04X", r)
		}
	}
	return ""
}

// makeInstanceID returns "<hostname>-<pid>-<4 random hex>" (DESIGN §5), the host name
// made acceptable as a name.
func makeInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.Map(func(r rune) rune {
		if r == '/' || r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '-'
		}
		return r
	}, host)
	for len(host) > nameMaxBytes-30 {
		_, size := utf8.DecodeLastRuneInString(host)
		host = host[:len(host)-size]
	}
	var b [2]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
