// The config poller: one request per poll interval at most, held by the server until the
// config changes or `wait` elapses (DESIGN §5, docs/control-plane.md).

package roottrace

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// currentPollInterval returns the last valid config's poll interval (kept across an
// invalid config), else the default; clamped.
func (a *agent) currentPollInterval() time.Duration {
	a.mu.Lock()
	d := a.pollInterval
	a.mu.Unlock()
	if d < a.lim.pollIntervalMin {
		d = a.lim.pollIntervalMin
	}
	if d > a.lim.pollIntervalMax {
		d = a.lim.pollIntervalMax
	}
	return d
}

// pollLoop starts at most one config request per poll interval; after a held request
// returned because of a change, the next starts at once, but at most once a second.
func (a *agent) pollLoop() {
	next := time.Now()
	lastValid := true // the last poll brought a valid config (200 or 304)
	for {
		if left := time.Until(next); left > 0 && !a.sleep(left) {
			return
		}
		if a.stopping() {
			return
		}
		started := time.Now()
		before := a.control()
		changed := a.pollOnce()
		after := a.control()
		valid := after.cfg != nil && !after.validAt.Equal(before.validAt)
		if valid && !lastValid {
			a.kickUploader() // the server is back: what is queued goes now, not after the backoff
		}
		lastValid = valid
		gap := a.currentPollInterval()
		if changed && a.lim.repollMin < gap {
			gap = a.lim.repollMin
		}
		next = started.Add(gap)
	}
}

// pollOnce sends one config request and applies its answer. It returns true when a held
// request returned a changed config.
func (a *agent) pollOnce() bool {
	a.awaitReaction() // the status after the last change, once the profiler acted on it
	q := a.commonParams()
	q.Set("status", a.statusString())
	q.Set("interval_us", strconv.Itoa(goSamplingIntervalUS))
	a.mu.Lock()
	etag := a.etag
	a.mu.Unlock()
	if a.control().cfg == nil {
		etag = ""
	}
	var wait time.Duration
	if etag != "" {
		wait = a.currentPollInterval()
		if wait > a.lim.pollWaitMax {
			wait = a.lim.pollWaitMax
		}
		wait = wait.Truncate(time.Second)
		q.Set("etag", etag)
		q.Set("wait", strconv.Itoa(int(wait/time.Second)))
	}
	a.polls.Add(1)
	res, err := a.http.do(a.pollCtx, "GET", "/api/v1/sdk/config", q, nil,
		wait+a.lim.requestSlack, a.lim.configMaxBytes)
	if a.stopping() {
		return false // ended by stop: not a failure of the control plane
	}
	switch {
	case errors.Is(err, errTooLarge):
		a.setInvalid("config larger than " + strconv.FormatInt(a.lim.configMaxBytes, 10) + " bytes")
		return false
	case err != nil:
		a.setPollErr("config poll failed: " + shortErr(err))
		return false
	case res.status == 304:
		c := a.control()
		if etag == "" || c.cfg == nil {
			a.setPollErr("304 to a poll without etag")
			return false
		}
		a.setControl(&control{cfg: c.cfg, validAt: time.Now(), refused: c.refused})
		a.setPollErr("")
		return false
	case res.status != 200:
		if res.status >= 400 && res.status < 500 {
			// A refusal (key revoked, wrong scope, ...): forget the etag, so that once its
			// cause is fixed the next poll gets a full 200 at once instead of being held and
			// answered 304. A 5xx or a network error keeps it: the server refused nothing.
			a.mu.Lock()
			a.etag = ""
			a.mu.Unlock()
		}
		msg := "config poll answered " + strconv.Itoa(res.status)
		if m := serverMessage(res.body); m != "" {
			msg += ": " + m
		}
		a.setPollErr(msg)
		return false
	}
	cfg, err := parseConfig(res.body, a.lim, res.header.Get("ETag"))
	if err != nil {
		a.setInvalid(err.Error())
		return false
	}
	a.mu.Lock()
	a.pollInterval = cfg.pollInterval
	a.etag = cfg.etag
	a.pollErr, a.invalid = "", ""
	a.mu.Unlock()
	a.setControl(&control{cfg: &cfg, validAt: time.Now()})
	return etag != ""
}

func (a *agent) setPollErr(msg string) {
	a.mu.Lock()
	a.pollErr = msg
	a.mu.Unlock()
}

// setInvalid handles an invalid config: profiling stops at once; the next poll asks
// afresh (without etag).
func (a *agent) setInvalid(reason string) {
	a.mu.Lock()
	a.invalid = trimPrefix(reason, errConfig.Error()+": ")
	a.pollErr = ""
	a.etag = ""
	a.mu.Unlock()
	a.setControl(&control{})
}

func trimPrefix(s, p string) string {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// shortErr returns err's message for a status or LastError: a *url.Error (net/http's
// `Get "http://...?instance=...": cause`) unwrapped to its cause, so that the cause is
// kept and the request's URL and query string never show; any other URL's query string
// left out; runs of whitespace made one space; at most 120 characters.
func shortErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return clip(oneLine(dropQueries(err.Error())), 120)
}

// dropQueries cuts the query string ("?..." up to a space or quote) off every URL in s.
func dropQueries(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		end := i + strings.IndexAny(s[i:]+" ", " \t\n\"'`")
		u := s[:end]
		if q := strings.IndexByte(s[i:end], '?'); q >= 0 {
			u = s[:i+q]
		}
		b.WriteString(u)
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}

// oneLine returns s with every run of whitespace (newlines included) made one space,
// trimmed.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip returns s cut to at most n bytes, on a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
