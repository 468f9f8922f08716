// Accuracy workload (tests/accuracy) for the Go SDK: one goroutine, locked to its OS thread,
// burns about 0.7 of a CPU in one known function, burnHot: every 100 ms it calls it over and
// over for 70 ms of wall time (less CPU than that on a busy host or under a CPU quota).
// Prints JSON lines on stdout, as burn_hot.js does: "profiling" when the SDK starts
// profiling, "burn" after every burst with the wall and CPU time (the burning thread's CPU
// clock) spent inside burnHot since the start, "stopping" and "stopped" (with
// the SDK's status) around roottrace.Stop. It runs RUN_S seconds from the first profile.
// Usage: burn_hot SERVER KEY SERVICE RUN_S
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	roottrace "github.com/roottrace/roottrace/sdk/go"
)

const (
	period = 100 * time.Millisecond
	burst  = 70 * time.Millisecond
	chunk  = 50000 // xorshift rounds per call: ~0.1 ms
)

//go:noinline
func burnHot(seed uint32, n int) uint32 {
	x := seed | 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		x += uint32(i)
	}
	return x
}

func emit(ev map[string]any) {
	ev["t"] = float64(time.Now().UnixNano()) / 1e9
	b, _ := json.Marshal(ev)
	os.Stdout.Write(append(b, '\n'))
}

// threadCPUMs is the calling thread's CPU time, ms: clock_gettime(CLOCK_THREAD_CPUTIME_ID),
// which counts the running slice up to now. getrusage(RUSAGE_THREAD) does not (it lags by
// up to a scheduler tick: 4 % of a 50 ms burst, measured).
func threadCPUMs() float64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	_, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		return 0
	}
	return float64(ts.Nano()) / 1e6
}

func main() {
	runS, _ := strconv.ParseFloat(os.Args[4], 64)
	// Back to back: the test compares the samples with the kernel over 45 s, and this
	// workload's tiny heap would otherwise get the default's 5 s of every minute (heap.go).
	opts := roottrace.Options{Server: os.Args[1], Key: os.Args[2], Service: os.Args[3],
		Version: "accuracy-1", DutyCycle: roottrace.Continuous}
	if err := roottrace.Start(opts); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(2)
	}
	runtime.LockOSThread() // the thread whose CPU clock measures the bursts
	var acc uint32 = 1
	var burnMs, burnCPUMs float64
	var since time.Time
	next := time.Now()
	for {
		c0, end := threadCPUMs(), time.Now().Add(burst)
		for t0 := time.Now(); t0.Before(end); {
			acc = burnHot(acc, chunk)
			t1 := time.Now()
			burnMs += float64(t1.Sub(t0)) / 1e6
			t0 = t1
		}
		burnCPUMs += threadCPUMs() - c0
		emit(map[string]any{"event": "burn", "burn_ms": burnMs, "burn_cpu_ms": burnCPUMs})
		if since.IsZero() && roottrace.Status().State == "profiling" {
			since = time.Now()
			emit(map[string]any{"event": "profiling"})
		}
		if !since.IsZero() && time.Since(since).Seconds() >= runS {
			break
		}
		next = next.Add(period)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		} else {
			next = time.Now()
		}
	}
	emit(map[string]any{"event": "stopping"})
	roottrace.Stop(5 * time.Second)
	emit(map[string]any{"event": "stopped", "info": roottrace.Status(), "acc": acc})
}
