package roottrace

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"
)

var sink map[int]int

// appSideBurn spins and fills maps (so that runtime frames, e.g. runtime.mapassign, show).
//
//go:noinline
func appSideBurn(d time.Duration) uint64 {
	end := time.Now().Add(d)
	x := burnCPU(d / 2)
	for time.Now().Before(end) {
		m := map[int]int{}
		for i := 0; i < 1000; i++ {
			m[i*7] = i
		}
		sink = m
	}
	return x
}

//go:noinline
func sdkSideBurn(d time.Duration) uint64 { return burnCPU(d) }

const pkgPath = "github.com/roottrace/roottrace/sdk/go"

// A real runtime/pprof CPU profile: Go's names, one frame per function, no lines, and the
// goroutine labelled roottrace=sdk (and every goroutine it starts) left out.
func TestConvertRealProfileDropsSDKLabel(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("CPU profiler in use (go test -cpuprofile?)")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go pprof.Do(context.Background(), pprof.Labels(sdkLabelKey, sdkLabelValue), func(context.Context) {
		inner := make(chan struct{})
		go func() { sdkSideBurn(400 * time.Millisecond); close(inner) }() // inherits the label
		sdkSideBurn(400 * time.Millisecond)
		<-inner
		wg.Done()
	})
	appSideBurn(500 * time.Millisecond)
	wg.Wait()
	pprof.StopCPUProfile()

	samples, period, err := convertCPUProfile(buf.Bytes(), 256, 20000)
	if err != nil {
		t.Fatal(err)
	}
	if period != 10000000 {
		t.Fatalf("period %d", period)
	}
	names := map[string]bool{}
	var total int64
	for _, s := range samples {
		total += s.count
		for _, f := range s.stack {
			names[f] = true
			if strings.Contains(f, ".go:") || f == "" {
				t.Fatalf("frame %q", f)
			}
		}
		if s.value != s.count*period {
			t.Fatalf("value %d count %d", s.value, s.count)
		}
	}
	if !names[pkgPath+".appSideBurn"] || !names[pkgPath+".burnCPU"] || !names["testing.tRunner"] {
		t.Fatalf("missing frames: %v", names)
	}
	runtimeSeen := false
	for n := range names {
		runtimeSeen = runtimeSeen || strings.HasPrefix(n, "runtime.")
	}
	if !runtimeSeen || names[pkgPath+".sdkSideBurn"] {
		t.Fatalf("runtime frames %v, sdkSideBurn present %v: %v", runtimeSeen, names[pkgPath+".sdkSideBurn"], names)
	}
	if total < 3 { // 0.5 s at 100 Hz of one of 3 busy goroutines on a loaded host
		t.Fatalf("%d samples", total)
	}
	// Encoded, the profile has no lines, addresses or mappings.
	p, err := parsePprof(encodeProfile(&profileData{ptype: "cpu", timeNanos: 1, durationNanos: 1, period: period, samples: samples}))
	if err != nil || len(p.mapFile) != 0 {
		t.Fatalf("%v %v", err, p.mapFile)
	}
}

// A hand-made profile as Go writes it (unpacked fields of <= 2 elements, value before
// location_id): inlined lines give one frame each, innermost first; a location without
// lines is named after its mapping; stacks are truncated on the root side and merged.
func TestConvertInliningUnsymbolizedDepthAndMerge(t *testing.T) {
	var prof pbuf
	strs := []string{"", "samples", "count", "cpu", "nanoseconds", "main.leaf", "main.inlinedInto",
		"main.root", "/usr/lib/libc.so.6", "other", "x", "roottrace", "sdk", "main.sdkWork"}
	prof.bytesField(1, valueType(1, 2))
	prof.bytesField(1, valueType(3, 4))
	sampleMsg := func(locs []int64, count int64, label [2]int64) {
		var s pbuf
		s.num(2, count)
		s.num(2, count*10000000)
		for _, l := range locs {
			s.num(1, l)
		}
		if label[0] != 0 {
			var lb pbuf
			lb.num(1, label[0])
			lb.num(2, label[1])
			s.bytesField(3, lb.b)
		}
		prof.bytesField(2, s.b)
	}
	sampleMsg([]int64{1, 2}, 3, [2]int64{9, 10})  // other label: kept
	sampleMsg([]int64{3, 1, 2}, 2, [2]int64{})    // unsymbolized leaf
	sampleMsg([]int64{1, 2}, 4, [2]int64{})       // same stack: merged
	sampleMsg([]int64{4, 2}, 5, [2]int64{11, 12}) // roottrace=sdk: dropped
	var m pbuf
	m.num(1, 1)
	m.num(5, 8)
	prof.bytesField(3, m.b)
	loc := func(id, mapping int64, fns ...int64) {
		var l pbuf
		l.num(1, id)
		l.num(2, mapping)
		l.num(3, 0x4000+id)
		for _, f := range fns {
			var line pbuf
			line.num(1, f)
			line.num(2, 42)
			l.bytesField(4, line.b)
		}
		prof.bytesField(4, l.b)
	}
	loc(1, 1, 1, 2) // main.leaf inlined into main.inlinedInto
	loc(2, 1, 3)
	loc(3, 1)
	loc(4, 1, 4)
	for id, name := range []int64{5, 6, 7, 13} {
		var f pbuf
		f.num(1, int64(id+1))
		f.num(2, name)
		prof.bytesField(5, f.b)
	}
	for _, s := range strs {
		prof.bytesField(6, []byte(s))
	}
	prof.num(12, 10000000)

	samples, period, err := convertCPUProfile(gzipBytes(prof.b), 256, 100)
	if err != nil || period != 10000000 || len(samples) != 2 {
		t.Fatalf("%v %d %+v", err, period, samples)
	}
	if got := strings.Join(samples[0].stack, ";"); got != "main.leaf;main.inlinedInto;main.root" || samples[0].count != 7 {
		t.Fatalf("%q %d", got, samples[0].count)
	}
	if got := strings.Join(samples[1].stack, ";"); got != "libc.so.6.[unknown];main.leaf;main.inlinedInto;main.root" {
		t.Fatalf("%q", got)
	}
	samples, _, _ = convertCPUProfile(prof.b, 2, 100) // leaf side kept under (truncated); leaves differ
	if strings.Join(samples[0].stack, ";") != "main.leaf;(truncated)" || len(samples[1].stack) != 2 ||
		samples[1].stack[1] != truncatedFrame {
		t.Fatalf("%+v", samples)
	}
	samples, _, _ = convertCPUProfile(prof.b, 256, 1) // one distinct stack, the rest trimmed
	if len(samples) != 2 || samples[1].stack[0] != trimmedFrame || samples[1].count != 2 {
		t.Fatalf("%+v", samples)
	}
	if _, _, err := convertCPUProfile([]byte{0x0a, 0xff}, 256, 10); err == nil {
		t.Fatal("malformed profile accepted")
	}
}

//go:noinline
func deepRecurse(n int, d time.Duration) uint64 {
	if n == 0 {
		return burnCPU(d)
	}
	return deepRecurse(n-1, d) + 1
}

// Go's CPU profiler keeps at most 64 frames (the leaf side): a real deep recursion's
// stack comes out as 64 frames under a "(truncated)" root, a shallow one unmarked.
func TestConvertRealDeepStackMarkedTruncated(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("CPU profiler in use (go test -cpuprofile?)")
	}
	done := make(chan uint64)
	go func() { done <- deepRecurse(1000, 400*time.Millisecond) }()
	appSideBurn(400 * time.Millisecond)
	<-done
	pprof.StopCPUProfile()

	for _, depth := range []int{256, 40} {
		samples, _, err := convertCPUProfile(buf.Bytes(), depth, 20000)
		if err != nil {
			t.Fatal(err)
		}
		deep, shallow := 0, 0
		for _, s := range samples {
			n := len(s.stack)
			root := s.stack[n-1]
			switch {
			case strings.Contains(strings.Join(s.stack, ";"), ".deepRecurse;") && !strings.HasSuffix(root, "Truncated.func1"):
				want := goStackLimit + 1
				if depth < want {
					want = depth
				}
				if root != truncatedFrame || n != want || s.stack[n-2] != pkgPath+".deepRecurse" {
					t.Fatalf("depth %d: deep stack of %d frames, root %q: %v", depth, n, root, s.stack)
				}
				deep++
			case root == "testing.tRunner":
				shallow++
			}
			for _, f := range s.stack[:n-1] {
				if f == truncatedFrame {
					t.Fatalf("(truncated) not at the root: %v", s.stack)
				}
			}
			if n < goStackLimit && n < depth && root == truncatedFrame {
				t.Fatalf("shallow stack marked: %v", s.stack)
			}
		}
		if deep == 0 || shallow == 0 {
			t.Fatalf("depth %d: %d deep, %d shallow stacks: %+v", depth, deep, shallow, samples)
		}
	}
}

// The rule on its own: 64 frames or more and no natural root means Go cut the stack.
func TestMarkTruncated(t *testing.T) {
	stack := func(n int, root string) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = "main.f"
		}
		if root != "" {
			s[n-1] = root
		}
		return s
	}
	for _, c := range []struct {
		frames   []string
		depth    int
		wantLen  int
		wantRoot string
	}{
		{stack(63, ""), 256, 63, "main.f"},                       // below the limit: whole
		{stack(64, ""), 256, 65, truncatedFrame},                 // at the limit: cut by Go
		{stack(66, ""), 256, 67, truncatedFrame},                 // inlined callers of the last PC added
		{stack(64, "runtime.main"), 256, 64, "runtime.main"},     // exactly 64 to the main goroutine's root
		{stack(64, "runtime.mstart"), 256, 64, "runtime.mstart"}, // a system stack, whole
		{stack(64, ""), 64, 64, truncatedFrame},                  // 63 kept + (truncated)
		{stack(10, ""), 4, 4, truncatedFrame},                    // the config's depth
		{stack(10, ""), 1, 1, truncatedFrame},
		{stack(3, ""), 3, 3, "main.f"},
	} {
		in := append([]string(nil), c.frames...)
		got := markTruncated(in, c.depth)
		if len(got) != c.wantLen || got[len(got)-1] != c.wantRoot {
			t.Errorf("%d frames (root %s), depth %d: %d frames, root %s", len(c.frames),
				c.frames[len(c.frames)-1], c.depth, len(got), got[len(got)-1])
		}
	}
}
