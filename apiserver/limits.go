package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// This file bounds what one request may hold: how long its body may take
// to arrive and its response to be written (RequestTimeout), and how a
// request that is refused before its body is read lets go of its
// connection. inflight.go bounds the requests served at once, conns.go the
// connections.

// requestClass is how a request is bounded, after kube-apiserver's
// long-running check and its max-in-flight filter.
type requestClass uint8

const (
	// readOnly: GET and HEAD (get, list, and the non-resource paths such
	// as discovery), bounded by MaxRequestsInFlight and RequestTimeout.
	readOnly requestClass = iota
	// mutating: every other method, bounded by MaxMutatingRequestsInFlight
	// and RequestTimeout.
	mutating
	// longRunning: watches and pods' log, exec, attach and portforward —
	// the requests kube-apiserver's --max-requests-inflight and
	// --request-timeout leave alone (it also counts proxy, which the
	// embedded server does not serve). Bounded by MaxWatches; they manage
	// their own write deadlines (watch.go).
	longRunning
)

// longRunningSubresources are kube-apiserver's long-running subresources
// (pkg/controlplane/apiserver's BasicLongRunningRequestCheck).
var longRunningSubresources = map[string]bool{"log": true, "exec": true, "attach": true, "portforward": true, "proxy": true}

// classify tells a request's class. It looks at the path and the query only
// when they may name a long-running request, so most requests cost a few
// string comparisons.
func classify(r *http.Request) requestClass {
	class := mutating
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		class = readOnly
	}
	path := r.URL.Path
	if !strings.HasPrefix(path, "/api/") && !strings.HasPrefix(path, "/apis/") {
		return class // not a resource request
	}
	get := r.Method == http.MethodGet
	watch := get && watchParam(r.URL.RawQuery)
	if !watch && !(get && strings.Contains(path, "/watch/")) && !longRunningSubresources[path[strings.LastIndexByte(path, '/')+1:]] {
		return class
	}
	ri, ok := parseResourcePath(path)
	if !ok {
		return class
	}
	if (get && (watch || ri.watchPath)) || longRunningSubresources[ri.subresource] {
		return longRunning
	}
	return class
}

// watchParam reports whether a raw query asks for a watch (watch=true, as
// kube-apiserver converts booleans: see boolParam).
func watchParam(rawQuery string) bool {
	if !strings.Contains(rawQuery, "watch") {
		return false
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil && q == nil {
		return false
	}
	return boolParam(q, "watch")
}

// invalidTimeout is kube-apiserver's message for a timeout parameter that
// is not a duration (its request-deadline filter's).
const invalidTimeout = "invalid timeout specified in the request URL"

// requestTimeout returns how long a request that is not long-running may
// take: Options.RequestTimeout, or less when the request's timeout query
// parameter asks for less, as kube-apiserver's request-deadline filter
// decides (a parameter that is not a duration is a 400).
func (s *Server) requestTimeout(r *http.Request) (time.Duration, error) {
	timeout := s.opts.RequestTimeout
	if !strings.Contains(r.URL.RawQuery, "timeout=") {
		return timeout, nil
	}
	v := r.URL.Query().Get("timeout")
	if v == "" {
		return timeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("%s - %v", invalidTimeout, err))
	}
	if d > 0 && d < timeout {
		timeout = d
	}
	return timeout, nil
}

// setDeadlines sets the read and write deadlines of a request, per request
// rather than server-wide (http.Server's ReadTimeout and WriteTimeout would
// cut watches): a request that is not long-running must have its body read
// and its response written by start+timeout. A long-running request clears
// the write deadline an earlier request of the connection left; the watch
// sets its own as it writes. The errors of a ResponseWriter that has no
// deadlines (an httptest.ResponseRecorder) are ignored.
func setDeadlines(rc *http.ResponseController, class requestClass, deadline time.Time) {
	if class == longRunning {
		_ = rc.SetWriteDeadline(time.Time{})
		return
	}
	_ = rc.SetReadDeadline(deadline)
	_ = rc.SetWriteDeadline(deadline)
}

// timeoutBody is a request body read under the request's deadline: a read
// that times out gives kube-apiserver's 504 Timeout Status (readBody passes
// API statuses through), and leaves a second to write it.
type timeoutBody struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (b *timeoutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		_ = b.rc.SetWriteDeadline(time.Now().Add(time.Second))
		return n, requestTimedOut()
	}
	return n, err
}

// requestTimedOut is kube-apiserver's answer to a request that did not
// complete within --request-timeout.
func requestTimedOut() error {
	return apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
}

// closeConnection makes the connection close once the response is written.
// It is used for answers given without reading the request's body (401,
// 413, 429) and for every 401: an unauthenticated client keeps no
// connection. Over HTTP/1, net/http would otherwise read (up to 256 KiB of)
// the unread body before writing the response or reusing the connection —
// waiting, for a body declared and never sent, as long as the read deadline
// allows — so the read deadline is expired too: the answer goes out at once
// and the connection closes. Over HTTP/2, "Connection: close" makes net/http
// send a GOAWAY: the client's open streams finish, its next requests take a
// new connection.
func closeConnection(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) {
	w.Header().Set("Connection", "close")
	if r.ProtoMajor == 1 {
		_ = rc.SetReadDeadline(time.Now())
	}
}

// maxHeaderBytes bounds a request's headers (431 past it): 1 MiB, as
// kube-apiserver (and net/http's default).
const maxHeaderBytes = 1 << 20
