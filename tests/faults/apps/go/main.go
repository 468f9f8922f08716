// The Go SDK's fault application (tests/faults/run.py): request-like units of work (JSON and
// sha256, ~1 ms) every ~4 ms on one goroutine, each unit's latency measured from when it was
// due (so time it could not run counts), reported with the SDK's status once a second as one
// JSON line. Stops, flushing the SDK, when stdin closes. Env: RT_SERVER, RT_KEY, RT_SERVICE,
// RT_INSTANCE.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	roottrace "github.com/roottrace/roottrace/sdk/go"
)

type line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

func unit(seed int) int {
	lines := make([]line, 40)
	for j := range lines {
		lines[j] = line{SKU: fmt.Sprintf("SKU-%d", (seed*31+j)%997), Qty: j%7 + 1}
	}
	text, _ := json.Marshal(map[string]any{"id": seed, "lines": lines})
	var back struct{ Lines []line }
	_ = json.Unmarshal(text, &back)
	s := 0
	for _, l := range back.Lines {
		s += l.Qty
	}
	h := sha256.Sum256(text)
	return s + int(h[0])
}

func emit(units [][2]int64, final bool) {
	st := roottrace.Status()
	b, _ := json.Marshal(map[string]any{"t": float64(time.Now().UnixNano()) / 1e9, "u": units,
		"status": st.Status, "queued": st.ProfilesQueued, "sent": st.ProfilesSent,
		"dropped": st.ProfilesDropped, "final": final})
	os.Stdout.Write(append(b, '\n'))
}

func main() {
	opts := roottrace.Options{Server: os.Getenv("RT_SERVER"), Key: os.Getenv("RT_KEY"),
		Service: os.Getenv("RT_SERVICE"), Instance: os.Getenv("RT_INSTANCE"), Version: "faults-1",
		// Back to back: the fault tests count units across minutes-long outages, and this
		// app's tiny heap would otherwise get the default's 5 s of every minute (heap.go).
		DutyCycle: roottrace.Continuous}
	if err := roottrace.Start(opts); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(2)
	}
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	units := [][2]int64{}
	last, due, sink := time.Now(), time.Now(), 0
	for i := 0; ; i++ {
		select {
		case <-done:
			roottrace.Stop(5 * time.Second)
			emit(units, true)
			_ = sink
			return
		default:
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		for k := 0; k < 6; k++ {
			sink += unit(i)
		}
		end := time.Now()
		units = append(units, [2]int64{due.UnixMilli(), end.Sub(due).Microseconds()})
		due = end.Add(4 * time.Millisecond)
		if end.Sub(last) >= time.Second {
			emit(units, false)
			units, last = [][2]int64{}, end
		}
	}
}
