// The heap test behind the default duty cycle (Options.DutyCycle's zero value). While Go's
// CPU profiler runs, the runtime keeps its sample buffer on the GC heap: 1 MiB of stack words
// and 128 KiB of tags (runtime/cpuprof.go, profBufWordCount and profBufTagCount). The GC
// starts a cycle when the heap reaches its goal: twice the live heap at GOGC=100, and never
// under 4 MiB (the runtime's heapMinimum). A program whose goal sits at that minimum has ~3 MiB
// of room between cycles, and the buffer takes a third of it: measured on
// bench/sdk_overhead/work_go, +20 % GC cycles and +6 % CPU (docs/performance.md, *SDK
// overhead*). Above the minimum, the goal grows with the buffer and the cost is gone.

package roottrace

import "runtime/metrics"

// heapGoal is what the runtime says of its heap goal.
type heapGoal struct {
	goal uint64 // bytes: /gc/heap/goal:bytes
	gogc int64  // GOGC in percent (/gc/gogc:percent; 100 when the runtime does not say)
}

// readHeapGoal reads the runtime's heap goal (a few hundred nanoseconds; no allocation
// beyond the two samples).
func readHeapGoal() heapGoal {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	h := heapGoal{gogc: 100}
	if s[0].Value.Kind() == metrics.KindUint64 {
		h.goal = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		h.gogc = int64(s[1].Value.Uint64())
	}
	return h
}

// atMinimum reports whether the goal sits within a quarter of the GC's minimum goal
// (minAt100 bytes at GOGC=100, scaled by GOGC), where the profiler's buffer is costly. With
// the GC off (GOGC=off) or no goal read, it reports false: no cycles to add.
func (h heapGoal) atMinimum(minAt100 uint64) bool {
	if h.gogc <= 0 || h.goal == 0 {
		return false
	}
	min := minAt100 * uint64(h.gogc) / 100
	return h.goal <= min+min/4
}
