// Uploader: the bounded queue of finished profiles and the POST of each to
// /api/v1/profiles (DESIGN §4; answers per docs/control-plane.md).

package roottrace

import (
	"context"
	"math/rand"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// uploadOutcome is what one upload attempt came to.
type uploadOutcome int

const (
	uploadNone    uploadOutcome = iota // nothing queued
	uploadSent                         // 201, or 200 duplicate
	uploadDropped                      // another 4xx: retrying cannot help
	uploadRefused                      // 409: profiling is off for the service
	uploadRetry                        // 5xx, 507, network: kept and retried
)

// queuedProfile is a finished profile waiting to be uploaded.
type queuedProfile struct {
	id           string       // profile_id, a UUID v4, the same on every retry
	data         *profileData // the profile
	processCPUNs int64        // process CPU over the profile (ns), -1 when unknown
	body         []byte       // gzip pprof, made once
}

// uploader holds the queue; the agent's upload goroutine calls uploadOne.
type uploader struct {
	a        *agent
	mu       sync.Mutex
	queue    []*queuedProfile // oldest first
	notify   chan struct{}    // signalled on put
	sent     int64            // profiles stored by the server
	dropped  int64            // profiles given up (queue full, 4xx, 409)
	lastErr  string           // last failure, for Status
	maxQueue int
}

func newUploader(a *agent) *uploader {
	return &uploader{a: a, notify: make(chan struct{}, 1), maxQueue: a.lim.queueMax}
}

// put queues p, dropping the oldest when the queue is full. Never blocks.
func (u *uploader) put(p *queuedProfile) {
	u.mu.Lock()
	for len(u.queue) >= u.maxQueue {
		u.queue[0] = nil
		u.queue = u.queue[1:]
		u.dropped++
	}
	u.queue = append(u.queue, p)
	u.mu.Unlock()
	select {
	case u.notify <- struct{}{}:
	default:
	}
}

func (u *uploader) pending() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.queue)
}

func (u *uploader) setErr(msg string) {
	u.mu.Lock()
	u.lastErr = msg
	u.mu.Unlock()
}

// uploadOne uploads the oldest queued profile. Sent, dropped and refused remove it from
// the queue; retry leaves it.
func (u *uploader) uploadOne(ctx context.Context) uploadOutcome {
	u.mu.Lock()
	if len(u.queue) == 0 {
		u.mu.Unlock()
		return uploadNone
	}
	p := u.queue[0]
	u.mu.Unlock()
	if p.body == nil {
		p.body = buildBody(p.data, u.a.lim.uploadMaxBytes)
	}
	q := u.a.commonParams()
	q.Set("profile_id", p.id)
	if p.processCPUNs >= 0 {
		q.Set("process_cpu_ns", strconv.FormatInt(p.processCPUNs, 10))
	}
	res, err := u.a.http.do(ctx, "POST", "/api/v1/profiles", q, p.body, u.a.lim.uploadDeadline, 4096)
	if err != nil {
		u.setErr("upload failed: " + shortErr(err))
		return uploadRetry
	}
	var out uploadOutcome
	switch {
	case res.status == 200 || res.status == 201:
		out = uploadSent
	case res.status == 409:
		out = uploadRefused
	case res.status >= 400 && res.status < 500:
		out = uploadDropped
	default:
		u.setErr("upload answered " + strconv.Itoa(res.status))
		return uploadRetry
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if out != uploadSent {
		u.lastErr = "upload answered " + strconv.Itoa(res.status) + ": " + serverMessage(res.body)
	}
	if len(u.queue) > 0 && u.queue[0] == p {
		u.queue[0] = nil
		u.queue = u.queue[1:]
	}
	if out == uploadSent {
		u.sent++
	} else {
		u.dropped++
	}
	return out
}

// backoff returns the delay before retry `attempt` (1, 2, ...): doubling from lo, at most
// hi, with +-20 % jitter.
func backoff(attempt int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	if d > hi {
		d = hi
	}
	j := time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	if j > hi {
		j = hi
	}
	return j
}

// commonParams returns the query parameters every request carries.
func (a *agent) commonParams() url.Values {
	q := url.Values{}
	q.Set("service", a.opts.Service)
	q.Set("instance", a.opts.Instance)
	q.Set("runtime", runtimeName)
	q.Set("runtime_version", runtimeVersion())
	q.Set("sdk_version", SDKVersion)
	if a.opts.Version != "" {
		q.Set("version", a.opts.Version)
	}
	return q
}
