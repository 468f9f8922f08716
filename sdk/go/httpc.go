// A small HTTP client: one deadline on the whole request (headers and body, so a slow drip
// cannot hold it), a cap on the body read, cancellation by the caller's context.

package roottrace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// errTooLarge is returned when an answer's body exceeds the caller's cap.
var errTooLarge = errors.New("body too large")

// response is an HTTP answer with its body read (at most the cap).
type response struct {
	status int
	header http.Header
	body   []byte
}

// httpClient sends requests to one server base URL.
type httpClient struct {
	base   string       // scheme://host[:port][/prefix], no trailing slash
	auth   string       // Authorization header value
	client *http.Client // our own transport, never the application's
	agent  string       // User-Agent
}

func newHTTPClient(server, key string, lim limits) (*httpClient, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("server must be an http:// or https:// URL")
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: lim.connectTimeout}).DialContext,
		TLSHandshakeTimeout: lim.connectTimeout,
		// A new connection per request (one every poll interval at most): a reused one
		// that fails is retried by net/http, which would double a request.
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &httpClient{
		base:   strings.TrimRight(u.String(), "/"),
		auth:   "Bearer " + key,
		client: &http.Client{Transport: tr, CheckRedirect: noRedirect},
		agent:  "roottrace-go/" + SDKVersion,
	}, nil
}

// noRedirect keeps the key from following a redirect to another host.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// do sends one request and reads its answer within timeout. It returns errTooLarge
// (wrapped) when the body is larger than maxBody, and any network error.
func (c *httpClient) do(ctx context.Context, method, path string, q url.Values, body []byte,
	timeout time.Duration, maxBody int64) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path+"?"+q.Encode(), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("User-Agent", c.agent)
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > maxBody {
		return nil, fmt.Errorf("%w: %d bytes", errTooLarge, resp.ContentLength)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxBody {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, maxBody)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// closeIdle closes the client's idle connections.
func (c *httpClient) closeIdle() { c.client.CloseIdleConnections() }

// serverMessage returns the `message` of the server's JSON error answer, or a short
// excerpt of the body, on one line (whitespace runs made one space).
func serverMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return clip(oneLine(e.Message), 200)
	}
	if len(body) > 400 {
		body = body[:400]
	}
	return clip(oneLine(string(body)), 120)
}
