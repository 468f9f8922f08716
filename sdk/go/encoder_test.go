package roottrace

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// Every vector of sdk/testdata/vectors.json, encoded byte-exact.
func TestWireVectorsByteExact(t *testing.T) {
	data, err := os.ReadFile("../testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct {
			Name          string `json:"name"`
			Type          string `json:"type"`
			TimeNanos     int64  `json:"time_nanos"`
			DurationNanos int64  `json:"duration_nanos"`
			Period        int64  `json:"period"`
			Samples       []struct {
				Stack   []string `json:"stack"`
				Count   int64    `json:"count"`
				ValueNs int64    `json:"value_ns"`
			} `json:"samples"`
			PprofHex string `json:"pprof_hex"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) < 4 {
		t.Fatalf("%d vectors", len(file.Vectors))
	}
	for _, v := range file.Vectors {
		p := profileData{ptype: v.Type, timeNanos: v.TimeNanos, durationNanos: v.DurationNanos, period: v.Period}
		for _, s := range v.Samples {
			leafFirst := make([]string, len(s.Stack))
			for i, f := range s.Stack {
				leafFirst[len(s.Stack)-1-i] = f
			}
			p.samples = append(p.samples, sample{leafFirst, s.Count, s.ValueNs})
		}
		got := encodeProfile(&p)
		want, _ := hex.DecodeString(v.PprofHex)
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %x\nwant %x", v.Name, got, want)
		}
		// The gzip of it decodes back to the same samples.
		d, err := decodeProfile(gzipBytes(got))
		if err != nil || len(d.samples) != len(p.samples) || d.durNanos != v.DurationNanos {
			t.Errorf("%s: round trip %+v %v", v.Name, d, err)
		}
	}
}

func TestOversizedBodyFoldsLightestStacks(t *testing.T) {
	p := profileData{ptype: "cpu", timeNanos: 1, durationNanos: 10, period: 10000000}
	var count, value int64
	for i := 0; i < 3000; i++ {
		var stack []string
		for j := 0; j < 20; j++ {
			stack = append(stack, "m.f"+hex.EncodeToString([]byte{byte(i), byte(i >> 8), byte(j), byte(i * j)}))
		}
		p.samples = append(p.samples, sample{stack, 1, int64(3000-i) * 1000})
		count++
		value += int64(3000-i) * 1000
	}
	body := buildBody(&p, 100<<10)
	if len(body) > 100<<10 {
		t.Fatalf("%d bytes", len(body))
	}
	d, err := decodeProfile(body)
	if err != nil {
		t.Fatal(err)
	}
	last := d.samples[len(d.samples)-1]
	var c, v int64
	for _, s := range d.samples {
		c += s.count
		v += s.value
	}
	if len(last.stack) != 1 || last.stack[0] != trimmedFrame || c != count || v != value {
		t.Fatalf("last %v, count %d/%d value %d/%d", last.stack, c, count, v, value)
	}
	// The heaviest stack is kept whole.
	if d.samples[0].value != 3000*1000 || len(d.samples[0].stack) != 20 {
		t.Fatalf("%+v", d.samples[0])
	}
}

func TestQueueBoundedDroppingOldest(t *testing.T) {
	a := &agent{lim: defaultLimits()}
	a.lim.queueMax = 3
	u := newUploader(a)
	for i := 0; i < 5; i++ {
		u.put(&queuedProfile{id: string(rune('0' + i))})
	}
	if len(u.queue) != 3 || u.queue[0].id != "2" || u.queue[2].id != "4" || u.dropped != 2 {
		t.Fatalf("%d %d", len(u.queue), u.dropped)
	}
}
