// A fixed CPU-bound Go workload for bench/sdk_overhead/run.sh: JSON, sha256 and string
// work on 4 goroutines, the same every run. The work is timed from the moment the SDK is
// profiling (or at once without it) to its end. With the SDK, roottrace.Stop (end the
// profile, convert, gzip, upload: what each upload interval costs) is timed apart, as
// stop_wall_s and stop_cpu_s.
//
// Usage: work_go ROUNDS                         (no SDK)
//
//	work_go ROUNDS SERVER KEY SERVICE      (SDK at defaults)
//
// Prints one JSON line: {"sdk", "wall_s", "cpu_s", "stop_wall_s", "stop_cpu_s",
// "checksum", "sdk_status", "gc_cycles", "heap_goal_bytes"}: the GC cycles of the timed work,
// and the GC's heap goal at its end.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	roottrace "github.com/roottrace/roottrace/sdk/go"
)

const workers = 4

type line struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

type order struct {
	ID       int    `json:"id"`
	Customer string `json:"customer"`
	Lines    []line `json:"lines"`
	Notes    string `json:"notes"`
}

func makeOrder(i int) order {
	o := order{ID: i, Customer: fmt.Sprintf("customer-%d", i%113), Notes: strings.Repeat("deliver to the back door ", 3)}
	for j := 0; j < 20; j++ {
		o.Lines = append(o.Lines, line{SKU: fmt.Sprintf("SKU-%d", (i*31+j)%997), Qty: (i+j)%7 + 1,
			Price: float64((i*j)%500)/10 + 0.99})
	}
	return o
}

// oneRound prices, hashes and reformats 200 orders; returns a checksum.
func oneRound(r int) uint64 {
	var check uint64
	for i := 0; i < 200; i++ {
		text, _ := json.Marshal(makeOrder(r*200 + i))
		var back order
		_ = json.Unmarshal(text, &back)
		total := 0.0
		for _, l := range back.Lines {
			total += float64(l.Qty) * l.Price
		}
		check += uint64(total * 100)
		sum := sha256.Sum256(text)
		v, _ := strconv.ParseUint(hex.EncodeToString(sum[:])[:6], 16, 64)
		check += v
		words := strings.FieldsFunc(string(text), func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
		})
		sort.Strings(words)
		check += uint64(len(strings.ToUpper(strings.Join(words, "-"))))
		check %= 1000000007
	}
	return check
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// heapGoal is the GC's heap goal in bytes: at the end of the work, with the SDK's profile
// still running (sdk/go/heap.go decides the default duty cycle on it).
func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// gcCycles is the number of GC cycles the runtime has completed (what GODEBUG=gctrace=1
// prints a line for).
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 && len(os.Args) != 5 {
		fail("usage: work_go ROUNDS [SERVER KEY SERVICE]")
	}
	rounds, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fail("ROUNDS: %v", err)
	}
	sdk := len(os.Args) == 5
	if sdk {
		if err := roottrace.Start(roottrace.Options{Server: os.Args[2], Key: os.Args[3],
			Service: os.Args[4], Version: "bench-1"}); err != nil {
			fail("%v", err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for roottrace.Status().State != roottrace.StateProfiling {
			if time.Now().After(deadline) {
				fail("SDK not profiling after 15 s: %s", roottrace.Status().Status)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// RT_BENCH_LIVE_HEAP_MB=N keeps N MiB live for the whole run: the variant of a service with
	// a real heap (the GC's goal then sits at about twice N, not at its 4 MiB minimum).
	var live []uint64
	if mb, _ := strconv.Atoi(os.Getenv("RT_BENCH_LIVE_HEAP_MB")); mb > 0 {
		live = make([]uint64, mb<<20/8)
		for i := range live {
			live[i] = uint64(i)
		}
	}
	// With RT_BENCH_BARRIER set (bench/sdk_overhead/copair.py), say "ready" on stderr and wait
	// for a line on stdin, so that the two runs of a pair start their timed work together.
	if os.Getenv("RT_BENCH_BARRIER") != "" {
		fmt.Fprintln(os.Stderr, "ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	}
	gc0 := gcCycles()
	t0, c0 := time.Now(), cpuSeconds()
	sums := make([]uint64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				sums[w] = (sums[w] + oneRound(w*100003+r)) % 1000000007
			}
		}(w)
	}
	wg.Wait()
	wall, cpu := time.Since(t0).Seconds(), cpuSeconds()-c0
	gcs, goal := gcCycles()-gc0, heapGoal()
	runtime.KeepAlive(live)
	out := map[string]interface{}{"sdk": sdk, "wall_s": wall, "cpu_s": cpu,
		"stop_wall_s": nil, "stop_cpu_s": nil, "sdk_status": nil, "gc_cycles": gcs,
		"heap_goal_bytes": goal}
	if sdk {
		s0, sc0 := time.Now(), cpuSeconds()
		roottrace.Stop(5 * time.Second)
		out["stop_wall_s"], out["stop_cpu_s"] = time.Since(s0).Seconds(), cpuSeconds()-sc0
		out["sdk_status"] = roottrace.Status()
	}
	var check uint64
	for _, s := range sums {
		check = (check + s) % 1000000007
	}
	out["checksum"] = check
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
