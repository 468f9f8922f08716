package roottrace

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A failed poll's status keeps the cause (not the URL, whose query string carries the
// instance), and a plain-text error body shows on one line.
func TestPollErrorsShowTheCauseOnOneLine(t *testing.T) {
	a := testAgent(t, "http://127.0.0.1:1", nil, Options{Service: "svc", Instance: "inst-secret"})
	want := "waiting: no config yet (config poll failed: dial tcp 127.0.0.1:1: connect: connection refused)"
	if !waitFor(3*time.Second, func() bool { return a.report().Status == want }) {
		t.Fatalf("status %q, want %q", a.report().Status, want)
	}
	if le := a.report().LastError; le != "config poll failed: dial tcp 127.0.0.1:1: connect: connection refused" {
		t.Fatalf("last error %q", le)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r) // "404 page not found\n"
	}))
	t.Cleanup(srv.Close)
	b := testAgent(t, srv.URL, nil)
	want = "waiting: no config yet (config poll answered 404: 404 page not found)"
	if !waitFor(3*time.Second, func() bool { return b.report().Status == want }) {
		t.Fatalf("status %q, want %q", b.report().Status, want)
	}
}

func TestShortErr(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&url.Error{Op: "Get", URL: "http://h:1/api/v1/sdk/config?instance=i&service=s&runtime_version=go1.26.8",
			Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")},
			"dial tcp 127.0.0.1:1: connect: connection refused"},
		{&url.Error{Op: "Post", URL: "http://h/api/v1/profiles?instance=i", Err: errors.New("context deadline exceeded")},
			"context deadline exceeded"},
		{errors.New(`parse "http://h/x?instance=i&key=k": bad`), `parse "http://h/x": bad`},
		{errors.New("a\n\tb  c\r\n"), "a b c"},
		{errors.New(strings.Repeat("é", 100)), strings.Repeat("é", 60)},
	} {
		if got := shortErr(c.err); got != c.want {
			t.Errorf("shortErr(%q) = %q, want %q", c.err, got, c.want)
		}
	}
	if got := serverMessage([]byte("404 page not found\n")); got != "404 page not found" {
		t.Errorf("%q", got)
	}
	if got := formatStatus(StateWaiting, "x (a\nb)"); got != "waiting: x (a b)" {
		t.Errorf("%q", got)
	}
}
