// Agent: one running SDK instance. Three goroutines (config poller, profiler, uploader),
// all under the pprof label roottrace=sdk, around a control state that fails closed
// (DESIGN §5).

package roottrace

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// staleIntervals: profiling stops when no valid config (200 or 304) has arrived for this
// many poll intervals.
const staleIntervals = 3

// idleCheck is how often an idle goroutine looks at the control state anyway.
const idleCheck = 500 * time.Millisecond

// reactWait is the longest a poll waits for the profiler to act on the last control
// change before it computes the status it sends.
const reactWait = time.Second

// control is what the control plane last said; replaced whole, read without a lock.
type control struct {
	cfg     *remoteConfig // the last valid config; nil before one or after an invalid one
	validAt time.Time     // when a valid config (200 or 304) last arrived
	refused bool          // an upload got 409 since the last 200 config
	gen     uint64        // set by setControl: 1, 2, ... in the order stored
}

// staleAt returns when the config stops counting as fresh.
func (c *control) staleAt() time.Time {
	return c.validAt.Add(staleIntervals * c.cfg.pollInterval)
}

// allows reports whether profiling is on: a fresh valid config said enabled: true.
func (c *control) allows(now time.Time) bool {
	if c.cfg == nil || !c.cfg.enabled || c.refused {
		return false
	}
	return !now.After(c.staleAt())
}

// keepsPartial reports whether a profile cut short is still worth uploading: not when
// the server said profiling is off (it would answer 409).
func (c *control) keepsPartial() bool {
	return !c.refused && (c.cfg == nil || c.cfg.enabled)
}

// Agent life-cycle states.
const (
	stateNew int32 = iota
	stateRunning
	stateStopping
	stateStopped
)

// agent is one SDK instance.
type agent struct {
	opts Options     // as normalized by Start
	lim  limits      // clamp bounds (defaultLimits except in tests)
	http *httpClient // requests to the server
	up   *uploader   // queue of finished profiles

	ctl   atomic.Value // *control
	state atomic.Int32 // stateNew ... stateStopped

	mu           sync.Mutex
	pollErr      string        // why the last poll gave no valid config
	invalid      string        // why the last config was invalid
	internalErr  string        // last panic recovered in a goroutine
	declined     bool          // the last StartCPUProfile failed: someone else holds it
	pollInterval time.Duration // from the last valid config, else the default

	etag      string          // sent on the next poll (under mu)
	polls     atomic.Int64    // config requests started
	holding   atomic.Bool     // our own CPU profile is running
	profiling atomic.Bool     // profiling (holding, or in the off part of a duty cycle)
	heapAtMin atomic.Bool     // the default duty cycle found the heap near its minimum (heap.go)
	heapProbe func() heapGoal // the runtime's heap goal (readHeapGoal except in tests)
	starts    atomic.Int64    // successful StartCPUProfile calls
	samples   atomic.Int64    // samples in the profiles made (the SDK's own left out)
	ctlGen    atomic.Uint64   // generation of the last control stored
	reacted   atomic.Uint64   // generation of the last control the profiler acted on
	reactCh   chan struct{}   // signalled when reacted is stored

	wake       chan struct{}      // wakes the profiler: config change or stop
	upKick     chan struct{}      // ends the uploader's retry backoff: the server is back
	stopCh     chan struct{}      // closed by stop
	pollCtx    context.Context    // cancelled by stop (ends a held poll)
	pollCancel context.CancelFunc //
	upCtx      context.Context    // cancelled when stop's flush deadline passes
	upCancel   context.CancelFunc //
	profDone   chan struct{}      // closed when the profiler goroutine has ended
	upDone     chan struct{}      // closed when the uploader goroutine has ended
	pollDone   chan struct{}      // closed when the poller goroutine has ended
}

// newAgent returns an agent for normalized options; an error for bad options.
func newAgent(opts Options, lim limits) (*agent, error) {
	c, err := newHTTPClient(opts.Server, opts.Key, lim)
	if err != nil {
		return nil, err
	}
	a := &agent{opts: opts, lim: lim, http: c, pollInterval: lim.defaultPoll, heapProbe: readHeapGoal,
		wake: make(chan struct{}, 1), upKick: make(chan struct{}, 1), reactCh: make(chan struct{}, 1), stopCh: make(chan struct{}),
		profDone: make(chan struct{}), upDone: make(chan struct{}), pollDone: make(chan struct{})}
	a.up = newUploader(a)
	a.ctl.Store(&control{})
	a.pollCtx, a.pollCancel = context.WithCancel(context.Background())
	a.upCtx, a.upCancel = context.WithCancel(context.Background())
	return a, nil
}

func (a *agent) control() *control { return a.ctl.Load().(*control) }

// setControl replaces the control state (c, new, not shared) and wakes the profiler.
// The poller calls it, and the uploader on a 409.
func (a *agent) setControl(c *control) {
	a.mu.Lock() // generations in the order stored, whichever goroutine stores
	c.gen = a.ctlGen.Add(1)
	a.ctl.Store(c)
	a.mu.Unlock()
	a.signal()
}

// actedOn records that the profiler has acted on control c (started, declined, stopped
// or kept profiling under it), so that the status is up to date for c.
func (a *agent) actedOn(c *control) {
	if c.gen > a.reacted.Load() {
		a.reacted.Store(c.gen)
	}
	select {
	case a.reactCh <- struct{}{}:
	default:
	}
}

// awaitReaction waits, at most reactWait, until the profiler has acted on the current
// control state: a poll sent right after a change then carries the status that follows
// from it (declined, profiling), not the one from before.
func (a *agent) awaitReaction() {
	if a.reacted.Load() >= a.control().gen {
		return
	}
	t := time.NewTimer(reactWait)
	defer t.Stop()
	for a.reacted.Load() < a.control().gen {
		select {
		case <-a.reactCh:
		case <-t.C:
			return
		case <-a.stopCh:
			return
		}
	}
}

func (a *agent) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *agent) stopping() bool {
	select {
	case <-a.stopCh:
		return true
	default:
		return false
	}
}

// sleep waits d, or until stop; false when stopped.
func (a *agent) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a.stopCh:
		return false
	}
}

// start launches the goroutines under the pprof label roottrace=sdk; every goroutine
// they create (HTTP transport, the profile writer) inherits it.
func (a *agent) start() {
	if !a.state.CompareAndSwap(stateNew, stateRunning) {
		return
	}
	labels := pprof.Labels(sdkLabelKey, sdkLabelValue)
	for _, g := range []struct {
		body func()
		done chan struct{}
	}{{a.pollLoop, a.pollDone}, {a.profileLoop, a.profDone}, {a.uploadLoop, a.upDone}} {
		body, done := g.body, g.done
		go pprof.Do(context.Background(), labels, func(context.Context) {
			defer close(done)
			a.guarded(body)
		})
	}
}

// guarded runs body; a panic is recovered, recorded, and the body restarted after a
// second (never spins), until stop.
func (a *agent) guarded(body func()) {
	for {
		if a.runRecovered(body) {
			return
		}
		if !a.sleep(time.Second) {
			return
		}
	}
}

// runRecovered runs body and reports whether it returned normally.
func (a *agent) runRecovered(body func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			a.mu.Lock()
			a.internalErr = fmt.Sprintf("internal error: %v", r)
			a.mu.Unlock()
		}
	}()
	body()
	return true
}

// stop ends profiling, queues the profile in progress, uploads what is queued, and waits
// at most timeout (never more than the flush limit).
func (a *agent) stop(timeout time.Duration) {
	if !a.state.CompareAndSwap(stateRunning, stateStopping) {
		return
	}
	if timeout > a.lim.flushTimeout || timeout < 0 {
		timeout = a.lim.flushTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	close(a.stopCh)
	a.pollCancel()
	a.signal()
	for _, done := range []chan struct{}{a.profDone, a.upDone} {
		select {
		case <-done:
		case <-t.C:
		}
	}
	a.upCancel() // past the deadline: an upload in flight is abandoned
	select {
	case <-a.pollDone:
	case <-time.After(50 * time.Millisecond):
	}
	a.http.closeIdle()
	a.state.Store(stateStopped)
}

// ---- status ---------------------------------------------------------------------------

// statusString returns `<state>[: <reason>]` (docs/control-plane.md).
func (a *agent) statusString() string {
	switch a.state.Load() {
	case stateNew:
		return formatStatus(StateDisabled, "not started")
	case stateStopping, stateStopped:
		return formatStatus(StateDisabled, "stopped")
	}
	a.mu.Lock()
	pollErr, invalid, declined := a.pollErr, a.invalid, a.declined
	a.mu.Unlock()
	c := a.control()
	switch {
	case c.cfg == nil && invalid != "":
		return formatStatus(StateError, "invalid config: "+invalid)
	case c.cfg == nil:
		return formatStatus(StateWaiting, "no config yet"+paren(pollErr))
	case c.refused:
		return formatStatus(StateDisabled, "upload refused (409), waiting for a config that enables profiling")
	case !c.cfg.enabled:
		return StateDisabled
	case !c.allows(time.Now()):
		return formatStatus(StateError, fmt.Sprintf("no valid config for %d poll intervals%s", staleIntervals, paren(pollErr)))
	case declined:
		return formatStatus(StateDeclined, "CPU profiler in use")
	}
	return formatStatus(StateProfiling, a.profilingReason(c.cfg))
}

// profilingReason says where profiling differs from what the config asked.
func (a *agent) profilingReason(cfg *remoteConfig) string {
	var rs []string
	if cfg.ptype != profileType {
		rs = append(rs, cfg.ptype+" not supported, sending "+profileType)
	}
	if cfg.samplingIntervalUS != goSamplingIntervalUS {
		rs = append(rs, fmt.Sprintf("Go samples at 100 Hz (%d us), not %d us", goSamplingIntervalUS, cfg.samplingIntervalUS))
	}
	if d := a.opts.DutyCycle; d.active() {
		rs = append(rs, fmt.Sprintf("duty cycle %s every %s", d.On, d.Every))
	} else if d == (DutyCycle{}) && a.heapAtMin.Load() {
		d = a.lim.defaultDuty
		rs = append(rs, fmt.Sprintf("duty cycle %s every %s (heap near the GC's minimum goal)", d.On, d.Every))
	}
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += "; "
		}
		out += r
	}
	return out
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// report returns the StatusInfo of this agent.
func (a *agent) report() StatusInfo {
	s := a.statusString()
	state, reason := splitStatus(s)
	a.up.mu.Lock()
	sent, dropped, queued, upErr := a.up.sent, a.up.dropped, len(a.up.queue), a.up.lastErr
	a.up.mu.Unlock()
	a.mu.Lock()
	invalid := a.invalid
	if invalid != "" {
		invalid = errConfig.Error() + ": " + invalid // as the status says it
	}
	last := firstNonEmpty(invalid, a.pollErr, upErr, a.internalErr)
	a.mu.Unlock()
	return StatusInfo{Status: s, State: state, Reason: reason, IntervalUS: goSamplingIntervalUS,
		Service: a.opts.Service, Instance: a.opts.Instance, ProfilesSent: sent,
		ProfilesDropped: dropped, ProfilesQueued: queued, Samples: a.samples.Load(), LastError: last}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// ---- uploader goroutine ---------------------------------------------------------------

// uploadLoop uploads queued profiles: retries with backoff, drops on 4xx, stops profiling
// on 409; when stopping, it ends once the profiler is done and the queue is empty (or a
// retry failed while flushing).
func (a *agent) uploadLoop() {
	attempt := 0
	flushFailed := false
	for {
		stopping := a.stopping()
		profDone := isClosed(a.profDone)
		if stopping && profDone && a.up.pending() == 0 {
			return
		}
		if a.up.pending() == 0 {
			a.waitWork(stopping)
			continue
		}
		if a.upCtx.Err() != nil {
			return
		}
		switch a.up.uploadOne(a.upCtx) {
		case uploadRetry:
			if a.stopping() {
				if flushFailed {
					return // flushing and the server is away: give up
				}
				flushFailed = true // one more try, once the last profile is queued
				a.waitClosed(a.profDone)
				continue
			}
			attempt++
			select {
			case <-a.upKick: // a kick from before this failure is stale
			default:
			}
			if a.backoffWait(backoff(attempt, a.lim.backoffMin, a.lim.backoffMax)) {
				attempt = 0 // the server is back: retry at once
			}
		case uploadRefused:
			attempt = 0
			a.refuse()
		default:
			attempt = 0
		}
	}
}

// kickUploader ends the uploader's retry backoff in progress (the server is back).
func (a *agent) kickUploader() {
	select {
	case a.upKick <- struct{}{}:
	default:
	}
}

// backoffWait waits d, or less on stop or a kick; true when kicked.
func (a *agent) backoffWait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-a.stopCh:
		return false
	case <-a.upKick:
		return true
	}
}

// waitWork waits for a put, for stop, for the profiler's end, or idleCheck.
func (a *agent) waitWork(stopping bool) {
	t := time.NewTimer(idleCheck)
	defer t.Stop()
	stopC := a.stopCh
	if stopping {
		stopC = nil // already closed: would spin
	}
	select {
	case <-a.up.notify:
	case <-stopC:
	case <-a.profDone:
	case <-t.C:
	}
}

// waitClosed waits for ch to close, at most until the upload context ends.
func (a *agent) waitClosed(ch chan struct{}) {
	select {
	case <-ch:
	case <-a.upCtx.Done():
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// refuse handles a 409: profiling stops until a config says enabled: true; the next poll
// asks without etag so that it gets the current config at once.
func (a *agent) refuse() {
	c := a.control()
	a.setControl(&control{cfg: c.cfg, validAt: c.validAt, refused: true})
	a.mu.Lock()
	a.etag = ""
	a.mu.Unlock()
}
