// The profiler: CPU profiles from runtime/pprof, back to back while profiling is on (or
// in the "on" part of a duty cycle), each converted and queued for upload. It declines
// when someone else holds Go's CPU profiler, and never stops a profile it did not start.

package roottrace

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"runtime/pprof"
	"time"
)

// profileType is the only type Go's CPU profiler produces (DESIGN §2).
const profileType = "cpu"

// goPeriodNs is the period at Go's fixed 100 Hz, used when a profile does not say.
const goPeriodNs = 1e9 / 100

// session is one of our own CPU profiles in progress.
type session struct {
	buf   *bytes.Buffer // runtime/pprof writes the gzipped profile here at stop
	start time.Time     // when it started (monotonic)
	wall0 int64         // its start, Unix ns
	cpu0  int64         // process CPU at its start (ns), -1 when unknown
}

// startSession starts a CPU profile; nil when the profiler is held by someone else.
func (a *agent) startSession(now time.Time, wall0 int64, cpu0 int64) *session {
	s := &session{buf: new(bytes.Buffer), start: now, wall0: wall0, cpu0: cpu0}
	if err := pprof.StartCPUProfile(s.buf); err != nil {
		a.setDeclined(true)
		return nil
	}
	a.starts.Add(1)
	a.holding.Store(true)
	a.setDeclined(false)
	return s
}

func (a *agent) setDeclined(v bool) {
	a.mu.Lock()
	a.declined = v
	a.mu.Unlock()
}

// profileLoop runs profiles while the control state allows it. After a decline it tries
// again only a poll interval later; with a duty cycle it holds the profiler only during
// the "on" part of each period.
func (a *agent) profileLoop() {
	var retryAt time.Time // no new profile before this (a decline, or a duty cycle's off part)
	for !a.stopping() {
		c := a.control()
		now := time.Now()
		if !c.allows(now) {
			a.profiling.Store(false)
			a.heapAtMin.Store(false)
			a.setDeclined(false)
			retryAt = time.Time{}
			a.actedOn(c)
			a.waitWake(now.Add(idleCheck))
			continue
		}
		if now.Before(retryAt) {
			a.actedOn(c)
			a.waitWake(retryAt)
			continue
		}
		s := a.startSession(now, time.Now().UnixNano(), processCPUNs())
		if s == nil {
			a.profiling.Store(false)
			retryAt = now.Add(a.currentPollInterval())
			a.actedOn(c)
			continue
		}
		a.profiling.Store(true)
		a.actedOn(c)
		retryAt = a.runSessions(s, c.cfg)
	}
	a.profiling.Store(false)
}

// waitWake waits until t, a wake-up (config change, stop) or stop.
func (a *agent) waitWake(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-a.wake:
	case <-a.stopCh:
	}
}

// runSessions runs profiles back to back from s, under cfg, until profiling goes off,
// stop, a decline, or the end of the duty cycle's "on" part. It returns when the next may
// start. Whatever happens, it does not return holding the profiler.
func (a *agent) runSessions(s *session, cfg *remoteConfig) time.Time {
	defer func() {
		if a.holding.Load() { // only after a panic: ours, so ours to stop
			pprof.StopCPUProfile()
			a.holding.Store(false)
		}
	}()
	duty, adaptive := a.opts.DutyCycle, a.opts.DutyCycle == (DutyCycle{})
	var watch *heapWatch
	if adaptive {
		// The default: an "on" part as long as the default duty cycle's, at whose end the
		// heap decides (heap.go): near the GC's minimum goal, the off part; otherwise back
		// to back, and the heap decides again at the end of each profile.
		duty = a.lim.defaultDuty
		watch = &heapWatch{probe: a.heapProbe, every: a.lim.heapReadEvery}
		watch.reset(s.start)
	}
	dutyStart := s.start
	bounded := duty.active() // the current "on" part ends at dutyStart + duty.On
	for {
		c := a.control()
		stale := time.Now()
		if c.cfg != nil {
			cfg, stale = c.cfg, c.staleAt()
		}
		end := s.start.Add(cfg.uploadInterval)
		if bounded && dutyStart.Add(duty.On).Before(end) {
			end = dutyStart.Add(duty.On)
		}
		wakeAt := end
		if stale.Before(end) {
			wakeAt = stale.Add(time.Millisecond)
		}
		if watch != nil && watch.next.Before(wakeAt) {
			wakeAt = watch.next
		}
		a.waitWake(wakeAt)
		c = a.control()
		now := time.Now()
		if watch != nil {
			watch.read(now)
		}
		off := a.stopping() || !c.allows(now)
		if !off && now.Before(end) {
			a.actedOn(c)
			continue // woken early: look at the (maybe new) config again
		}
		pprof.StopCPUProfile() // ours: startSession succeeded
		a.holding.Store(false)
		onOver := bounded && !now.Before(dutyStart.Add(duty.On))
		if adaptive && !off {
			costly := watch.costly(now, a.lim.heapMinimum)
			watch.reset(now)
			a.heapAtMin.Store(costly)
			if onOver && !costly {
				onOver, bounded = false, false // a real heap: back to back from here
			} else if !bounded && costly {
				onOver, dutyStart = true, now.Add(-duty.On) // the off part, from now
			}
		}
		more := !off && !onOver
		var next *session
		cpu1 := processCPUNs()
		wall1 := s.wall0 + int64(now.Sub(s.start))
		if more {
			next = a.startSession(now, wall1, cpu1)
		}
		if !off || c.keepsPartial() {
			a.queueProfile(s, now, cpu1, cfg.maxStackDepth)
		}
		if next == nil {
			if off {
				return time.Time{}
			}
			if more { // declined: someone took the profiler between our stop and start
				a.profiling.Store(false)
				return now.Add(a.currentPollInterval())
			}
			return dutyStart.Add(duty.Every) // the duty cycle's off part
		}
		a.actedOn(c)
		s = next
	}
}

// queueProfile converts the finished session's profile and queues it for upload.
func (a *agent) queueProfile(s *session, end time.Time, cpu1 int64, depth int) {
	samples, period, err := convertCPUProfile(s.buf.Bytes(), depth, a.lim.maxStacks)
	if err != nil {
		a.mu.Lock()
		a.internalErr = "profile conversion: " + shortErr(err)
		a.mu.Unlock()
		return
	}
	if period <= 0 {
		period = goPeriodNs
	}
	for _, x := range samples {
		a.samples.Add(x.count)
	}
	cpu := int64(-1)
	if s.cpu0 >= 0 && cpu1 >= s.cpu0 {
		cpu = cpu1 - s.cpu0
	}
	a.up.put(&queuedProfile{id: newUUID(), processCPUNs: cpu, data: &profileData{
		ptype: profileType, timeNanos: s.wall0, durationNanos: int64(end.Sub(s.start)),
		period: period, samples: samples}})
}

// newUUID returns a random UUID v4.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
