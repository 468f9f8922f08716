// Encoder: the canonical pprof encoding of sdk/testdata/README.md, written by hand (a
// protobuf writer of a few varint and length-delimited fields), and its gzip.

package roottrace

import (
	"bytes"
	"compress/gzip"
)

// sample is one stack with its count and value.
type sample struct {
	stack []string // frames, leaf first
	count int64    // samples
	value int64    // nanoseconds (cpu)
}

// profileData is a profile ready to encode.
type profileData struct {
	ptype         string   // "cpu" (or "wall", for the shared test vectors)
	timeNanos     int64    // start, Unix ns
	durationNanos int64    // length, ns
	period        int64    // ns between samples
	samples       []sample // in the order they are written
}

// pbuf appends protobuf fields to a byte slice.
type pbuf struct{ b []byte }

func (p *pbuf) varint(v uint64) {
	for v >= 0x80 {
		p.b = append(p.b, byte(v)|0x80)
		v >>= 7
	}
	p.b = append(p.b, byte(v))
}

// num writes a varint field, omitted when 0 (proto3).
func (p *pbuf) num(field int, v int64) {
	if v == 0 {
		return
	}
	p.varint(uint64(field) << 3)
	p.varint(uint64(v))
}

// bytesField writes a length-delimited field.
func (p *pbuf) bytesField(field int, data []byte) {
	p.varint(uint64(field)<<3 | 2)
	p.varint(uint64(len(data)))
	p.b = append(p.b, data...)
}

// packed writes a packed repeated varint field, omitted when empty.
func (p *pbuf) packed(field int, vs []int64) {
	if len(vs) == 0 {
		return
	}
	var in pbuf
	for _, v := range vs {
		in.varint(uint64(v))
	}
	p.bytesField(field, in.b)
}

// valueType returns an encoded ValueType{type, unit}.
func valueType(typ, unit int64) []byte {
	var v pbuf
	v.num(1, typ)
	v.num(2, unit)
	return v.b
}

// encodeProfile returns the canonical uncompressed pprof bytes of p: one location and
// function per distinct frame, ids in order of first appearance walking the samples in
// order, each stack leaf first; the string table deduplicated in order of first use.
func encodeProfile(p *profileData) []byte {
	var strs []string
	index := map[string]int64{}
	str := func(s string) int64 {
		if i, ok := index[s]; ok {
			return i
		}
		index[s] = int64(len(strs))
		strs = append(strs, s)
		return index[s]
	}
	for _, s := range []string{"", "samples", "count", p.ptype, "nanoseconds"} {
		str(s)
	}
	frameID := map[string]int64{}
	var frames []string
	for _, s := range p.samples {
		for _, f := range s.stack {
			if _, ok := frameID[f]; !ok {
				frames = append(frames, f)
				frameID[f] = int64(len(frames))
			}
		}
	}
	var out pbuf
	out.bytesField(1, valueType(str("samples"), str("count")))
	out.bytesField(1, valueType(str(p.ptype), str("nanoseconds")))
	var ids []int64 // reused for every sample
	for _, s := range p.samples {
		ids = ids[:0]
		for _, f := range s.stack {
			ids = append(ids, frameID[f])
		}
		var sm pbuf
		sm.packed(1, ids)
		sm.packed(2, []int64{s.count, s.value})
		out.bytesField(2, sm.b)
	}
	for i := range frames {
		var line, loc pbuf
		line.num(1, int64(i+1))
		loc.num(1, int64(i+1))
		loc.bytesField(4, line.b)
		out.bytesField(4, loc.b)
	}
	for i, f := range frames {
		var fn pbuf
		fn.num(1, int64(i+1))
		fn.num(2, str(f))
		out.bytesField(5, fn.b)
	}
	for _, s := range strs {
		out.bytesField(6, []byte(s))
	}
	out.num(9, p.timeNanos)
	out.num(10, p.durationNanos)
	out.bytesField(11, valueType(str(p.ptype), str("nanoseconds")))
	out.num(12, p.period)
	return out.b
}

// gzipBytes compresses b (gzip, default level).
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	return buf.Bytes()
}

// trimmedFrame stands for the stacks left out of a profile to keep it within bounds.
const trimmedFrame = "(trimmed)"

// buildBody returns the gzip pprof body of p, at most maxBytes: when too large, the
// lightest stacks (p.samples comes heaviest first) are folded into one trimmedFrame stack,
// counts and values kept, until it fits.
func buildBody(p *profileData, maxBytes int) []byte {
	body := gzipBytes(encodeProfile(p))
	keep := len(p.samples)
	for len(body) > maxBytes && keep > 0 {
		keep /= 2
		q := *p
		q.samples = foldTail(p.samples, keep)
		body = gzipBytes(encodeProfile(&q))
	}
	return body
}

// foldTail returns the first keep samples and one trimmedFrame sample summing the rest
// (absent when nothing is left out).
func foldTail(samples []sample, keep int) []sample {
	if keep >= len(samples) {
		return samples
	}
	out := append([]sample(nil), samples[:keep]...)
	rest := sample{stack: []string{trimmedFrame}}
	for _, s := range samples[keep:] {
		rest.count += s.count
		rest.value += s.value
	}
	return append(out, rest)
}
