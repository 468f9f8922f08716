// Conversion of runtime/pprof's CPU profile (gzipped protobuf) into the canonical profile:
// a small protobuf reader for the few fields needed, frames named as Go names its
// functions, the SDK's own samples (label roottrace=sdk) left out (DESIGN §3, §5).

package roottrace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// The pprof label every SDK goroutine runs under; samples carrying it are dropped.
const (
	sdkLabelKey   = "roottrace"
	sdkLabelValue = "sdk"
)

// maxRawProfile bounds the decompressed runtime/pprof profile the reader accepts.
const maxRawProfile = 256 << 20

var errProto = errors.New("malformed pprof")

// pbReader reads protobuf wire format from a byte slice.
type pbReader struct {
	b   []byte
	err error
}

func (r *pbReader) varint() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if len(r.b) == 0 {
			r.err = errProto
			return 0
		}
		c := r.b[0]
		r.b = r.b[1:]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.err = errProto
	return 0
}

// next returns the next field's number and wire type, with its varint value (wire type
// 0) or its bytes (wire type 2); fixed-width fields are skipped over. ok is false at the
// end or on an error (then r.err is set).
func (r *pbReader) next() (field int, wire int, v uint64, data []byte, ok bool) {
	if r.err != nil || len(r.b) == 0 {
		return 0, 0, 0, nil, false
	}
	key := r.varint()
	field, wire = int(key>>3), int(key&7)
	switch wire {
	case 0:
		v = r.varint()
	case 1, 5:
		n := 8
		if wire == 5 {
			n = 4
		}
		if len(r.b) < n {
			r.err = errProto
			return 0, 0, 0, nil, false
		}
		r.b = r.b[n:]
	case 2:
		n := r.varint()
		if r.err != nil || n > uint64(len(r.b)) {
			r.err = errProto
			return 0, 0, 0, nil, false
		}
		data, r.b = r.b[:n], r.b[n:]
	default:
		r.err = errProto
		return 0, 0, 0, nil, false
	}
	return field, wire, v, data, r.err == nil
}

// appendRepeated appends a repeated varint field's values, packed or not.
func appendRepeated(dst []uint64, wire int, v uint64, data []byte) ([]uint64, error) {
	if wire == 0 {
		return append(dst, v), nil
	}
	r := pbReader{b: data}
	for len(r.b) > 0 && r.err == nil {
		dst = append(dst, r.varint())
	}
	return dst, r.err
}

// rawSample is a pprof Sample as read.
type rawSample struct {
	locs   []uint64 // location ids, leaf first
	values []uint64 // one per sample type
	labels [][2]uint64
}

// rawProfile holds the parts of a pprof Profile the conversion needs.
type rawProfile struct {
	sampleTypes [][2]uint64         // (type, unit) string indices
	samples     []rawSample         // in file order
	locLines    map[uint64][]uint64 // location id -> function ids, leaf (innermost) first
	locMapping  map[uint64]uint64   // location id -> mapping id
	funcName    map[uint64]uint64   // function id -> name string index
	mapFile     map[uint64]uint64   // mapping id -> filename string index
	strings     []string
	timeNanos   int64
	durNanos    int64
	period      int64
}

// str returns string i of the table, "" when out of range.
func (p *rawProfile) str(i uint64) string {
	if i < uint64(len(p.strings)) {
		return p.strings[i]
	}
	return ""
}

// readPairs reads a message of two varint fields 1 and 2 (ValueType, and the key/str of
// a Label).
func readPairs(data []byte) ([2]uint64, error) {
	var out [2]uint64
	r := pbReader{b: data}
	for {
		f, w, v, _, ok := r.next()
		if !ok {
			return out, r.err
		}
		if w == 0 && (f == 1 || f == 2) {
			out[f-1] = v
		}
	}
}

func readSample(data []byte) (rawSample, error) {
	var s rawSample
	r := pbReader{b: data}
	for {
		f, w, v, d, ok := r.next()
		if !ok {
			return s, r.err
		}
		var err error
		switch f {
		case 1:
			s.locs, err = appendRepeated(s.locs, w, v, d)
		case 2:
			s.values, err = appendRepeated(s.values, w, v, d)
		case 3:
			var kv [2]uint64
			kv, err = readPairs(d)
			s.labels = append(s.labels, kv)
		}
		if err != nil {
			return s, err
		}
	}
}

func (p *rawProfile) readLocation(data []byte) error {
	var id, mapping uint64
	var fns []uint64
	r := pbReader{b: data}
	for {
		f, w, v, d, ok := r.next()
		if !ok {
			break
		}
		switch {
		case f == 1 && w == 0:
			id = v
		case f == 2 && w == 0:
			mapping = v
		case f == 4 && w == 2:
			line, err := readPairs(d) // Line: function_id (1), line (2)
			if err != nil {
				return err
			}
			fns = append(fns, line[0])
		}
	}
	p.locLines[id], p.locMapping[id] = fns, mapping
	return r.err
}

// readIDField reads a message's id (field 1) and the varint field `want`.
func readIDField(data []byte, want int) (id, val uint64, err error) {
	r := pbReader{b: data}
	for {
		f, w, v, _, ok := r.next()
		if !ok {
			return id, val, r.err
		}
		if w == 0 && f == 1 {
			id = v
		} else if w == 0 && f == want {
			val = v
		}
	}
}

// parsePprof reads an uncompressed pprof Profile.
func parsePprof(data []byte) (*rawProfile, error) {
	p := &rawProfile{locLines: map[uint64][]uint64{}, locMapping: map[uint64]uint64{},
		funcName: map[uint64]uint64{}, mapFile: map[uint64]uint64{}}
	r := pbReader{b: data}
	for {
		f, w, v, d, ok := r.next()
		if !ok {
			break
		}
		var err error
		switch {
		case f == 1 && w == 2:
			var vt [2]uint64
			vt, err = readPairs(d)
			p.sampleTypes = append(p.sampleTypes, vt)
		case f == 2 && w == 2:
			var s rawSample
			s, err = readSample(d)
			p.samples = append(p.samples, s)
		case f == 3 && w == 2:
			var id, file uint64
			id, file, err = readIDField(d, 5)
			p.mapFile[id] = file
		case f == 4 && w == 2:
			err = p.readLocation(d)
		case f == 5 && w == 2:
			var id, name uint64
			id, name, err = readIDField(d, 2)
			p.funcName[id] = name
		case f == 6 && w == 2:
			p.strings = append(p.strings, string(d))
		case f == 9 && w == 0:
			p.timeNanos = int64(v)
		case f == 10 && w == 0:
			p.durNanos = int64(v)
		case f == 12 && w == 0:
			p.period = int64(v)
		}
		if err != nil {
			return nil, err
		}
	}
	return p, r.err
}

// gunzipLimited decompresses b (or returns it as is when not gzip), at most max bytes.
func gunzipLimited(b []byte, max int64) ([]byte, error) {
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > max {
		return nil, fmt.Errorf("profile larger than %d bytes decompressed", max)
	}
	return out, nil
}

// frameNames returns the frames of location id, leaf (innermost inlined) first.
func (p *rawProfile) frameNames(id uint64, dst []string) []string {
	fns := p.locLines[id]
	if len(fns) == 0 {
		name := "[unknown]"
		if m, ok := p.locMapping[id]; ok && m != 0 {
			if file := path.Base(p.str(p.mapFile[m])); file != "." && file != "/" {
				name = file + ".[unknown]"
			}
		}
		return append(dst, name)
	}
	for _, fn := range fns {
		name := p.str(p.funcName[fn])
		if name == "" {
			name = "[unknown]"
		}
		dst = append(dst, name)
	}
	return dst
}

// hasSDKLabel reports whether s carries the label roottrace=sdk.
func (p *rawProfile) hasSDKLabel(s *rawSample) bool {
	for _, kv := range s.labels {
		if p.str(kv[0]) == sdkLabelKey && p.str(kv[1]) == sdkLabelValue {
			return true
		}
	}
	return false
}

// valueIndex returns the index of sample type typ/unit, -1 when absent.
func (p *rawProfile) valueIndex(typ, unit string) int {
	for i, vt := range p.sampleTypes {
		if p.str(vt[0]) == typ && p.str(vt[1]) == unit {
			return i
		}
	}
	return -1
}

// goStackLimit is the most frames Go's CPU profiler records per sample (maxCPUProfStack
// in runtime/cpuprof.go: 64 in Go 1.21 to 1.26): one PC per logical frame, inlined calls
// included, so a stack Go cut has at least 64 frames once converted (runtime/pprof may
// add the inlined callers of the last PC). The root side beyond it is lost.
const goStackLimit = 64

// truncatedFrame is the synthetic root frame of a stack cut short (DESIGN §4, the
// server's and the other SDKs' convention).
const truncatedFrame = "(truncated)"

// naturalRoots are the frames a whole Go stack can end in even when it fills the
// runtime's 64 frames: where Go's unwinder stops (runtime.goexit, which runtime/pprof
// leaves out, runtime.mstart, runtime.rt0_go, and the stack switches runtime.mcall,
// runtime.morestack, runtime.systemstack), the main goroutine's runtime.main, and the
// pseudo-frames of a sample Go could not unwind.
var naturalRoots = map[string]bool{
	"runtime.goexit": true, "runtime.main": true, "runtime.mstart": true, "runtime.mstart0": true,
	"runtime.rt0_go": true, "runtime.mcall": true, "runtime.morestack": true,
	"runtime.systemstack": true, "runtime._System": true, "runtime._GC": true,
	"runtime._ExternalCode": true, "runtime._VDSO": true,
}

// markTruncated marks a stack (leaf first) that Go cut at its 64-frame limit with a
// truncatedFrame root, then keeps at most maxDepth frames: a deeper stack keeps its
// leaf-side maxDepth-1 frames under truncatedFrame. A goroutine's stack that fills the 64
// frames with only runtime.goexit beyond them is marked too: the two look alike.
func markTruncated(frames []string, maxDepth int) []string {
	if n := len(frames); n >= goStackLimit && !naturalRoots[frames[n-1]] {
		frames = append(frames, truncatedFrame)
	}
	if maxDepth < 1 {
		maxDepth = 1
	}
	if len(frames) > maxDepth {
		frames = append(frames[:maxDepth-1], truncatedFrame)
	}
	return frames
}

// convertCPUProfile turns runtime/pprof's CPU profile (gzipped or not) into the samples of
// a canonical cpu profile: stacks of `package.function` frames (one per Line, leaf first),
// a stack Go cut at its 64 frames under a "(truncated)" root, at most maxDepth frames
// (a deeper stack keeps its leaf side under "(truncated)"), identical stacks merged, samples labelled
// roottrace=sdk left out, at most maxStacks distinct stacks (the lightest beyond it
// folded into one "(trimmed)" stack), heaviest first. It also returns Go's period (ns).
func convertCPUProfile(data []byte, maxDepth, maxStacks int) ([]sample, int64, error) {
	raw, err := gunzipLimited(data, maxRawProfile)
	if err != nil {
		return nil, 0, err
	}
	p, err := parsePprof(raw)
	if err != nil {
		return nil, 0, err
	}
	ci, vi := p.valueIndex("samples", "count"), p.valueIndex("cpu", "nanoseconds")
	if ci < 0 || vi < 0 {
		return nil, 0, fmt.Errorf("%w: no samples/count and cpu/nanoseconds", errProto)
	}
	byKey := map[string]int{}
	var out []sample
	var frames []string
	for i := range p.samples {
		s := &p.samples[i]
		if len(s.values) != len(p.sampleTypes) || p.hasSDKLabel(s) {
			continue
		}
		frames = frames[:0]
		for _, loc := range s.locs {
			frames = p.frameNames(loc, frames)
		}
		frames = markTruncated(frames, maxDepth)
		key := strings.Join(frames, "\x00")
		j, ok := byKey[key]
		if !ok {
			j = len(out)
			byKey[key] = j
			out = append(out, sample{stack: append([]string(nil), frames...)})
		}
		out[j].count += int64(s.values[ci])
		out[j].value += int64(s.values[vi])
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].value > out[b].value })
	if len(out) > maxStacks {
		out = foldTail(out, maxStacks)
	}
	return out, p.period, nil
}
