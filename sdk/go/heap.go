// The heap test behind the default duty cycle (Options.DutyCycle's zero value). While Go's
// CPU profiler runs, the runtime keeps its sample buffer on the GC heap: 1 MiB of stack words
// and 128 KiB of tags (runtime/cpuprof.go, profBufWordCount and profBufTagCount). The GC
// starts a cycle when the heap reaches its goal: the live heap times 1 + GOGC/100, and never
// under 4 MiB x GOGC/100 (the runtime's heapMinimum). Where the goal sits at that minimum the
// buffer takes its size out of the room between cycles: on bench/sdk_overhead/work_go (a goal
// of 4 MiB) +20 % GC cycles and +6 % CPU (docs/performance-sdk.md, *SDK overhead*). Where the goal
// is above it, the goal grows with the buffer and the room does not shrink.
//
// With the live heap L (buffer included), the buffer B, GOGC g and the minimum M, the room is
// max(L(1+g), M) - L with the profiler and max((L-B)(1+g), M) - (L-B) without it; the first
// is the smaller exactly when the goal, read while profiling, is under M + B.
//
// The goal moves with every cycle (objects allocated while the GC marks count as live: reads
// of 4.0 to 12.6 MiB every 100 ms on a heap whose steady goal is 4 MiB, GOMAXPROCS=2), so the
// test takes the lowest goal read over the profile, one read every half second.

package roottrace

import (
	"runtime/metrics"
	"time"
)

// profBufBytes is what Go's CPU profiler keeps on the GC heap while it runs (see above).
const profBufBytes = 1<<17*8 + 1<<14*8

// heapGoal is what the runtime says of its heap goal.
type heapGoal struct {
	goal uint64 // bytes: /gc/heap/goal:bytes
	gogc int64  // GOGC in percent (/gc/gogc:percent; 100 when the runtime does not say; -1: off)
}

// readHeapGoal reads the runtime's heap goal (about a microsecond; two samples allocated).
func readHeapGoal() heapGoal {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	h := heapGoal{gogc: 100}
	if s[0].Value.Kind() == metrics.KindUint64 {
		h.goal = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		h.gogc = int64(s[1].Value.Uint64()) // GOGC=off reads as 2^64-1: -1
	}
	return h
}

// costly reports whether the profiler's buffer shrinks the GC's room at this goal, read
// while profiling: the goal is under the GC's minimum (minAt100 bytes at GOGC=100, scaled by
// GOGC) plus the buffer. With GOGC=off, or no goal read, it reports false. (GOGC=off with a
// GOMEMLIMIT is not looked at: the limit, not GOGC, then sets the goal.)
func (h heapGoal) costly(minAt100 uint64) bool {
	if h.gogc <= 0 || h.goal == 0 {
		return false
	}
	return h.goal < minAt100*uint64(h.gogc)/100+profBufBytes
}

// heapWatch keeps the lowest heap goal read while one of our profiles runs.
type heapWatch struct {
	probe func() heapGoal
	every time.Duration // between reads
	next  time.Time     // when the next read is due
	low   heapGoal      // the lowest goal read since reset; goal 0: none yet
}

// reset forgets the reads; the first new one is due `every` after now (after the profile's
// start, so that the GC has seen the buffer).
func (w *heapWatch) reset(now time.Time) {
	w.low, w.next = heapGoal{}, now.Add(w.every)
}

// read reads the goal when a read is due at now.
func (w *heapWatch) read(now time.Time) {
	if now.Before(w.next) {
		return
	}
	if h := w.probe(); h.goal > 0 && (w.low.goal == 0 || h.goal < w.low.goal) {
		w.low = h
	}
	w.next = now.Add(w.every)
}

// costly is heapGoal.costly of the lowest goal read, reading once now if none was.
func (w *heapWatch) costly(now time.Time, minAt100 uint64) bool {
	if w.low.goal == 0 {
		w.next = now
		w.read(now)
	}
	return w.low.costly(minAt100)
}
