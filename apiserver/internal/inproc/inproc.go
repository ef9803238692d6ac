// Package inproc lets the embedded API server's own controllers reach its
// API without a network: Transport calls the server's handler in process,
// Client makes JSON requests through any rest.Config and turns Status
// answers into *apierrors.StatusError.
package inproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// inProcessKey marks the context of a request that Transport serves.
type inProcessKey struct{}

// IsInProcess reports whether a request came through Transport: from the
// server's own controllers, not over a network (no client can set it).
func IsInProcess(r *http.Request) bool {
	v, _ := r.Context().Value(inProcessKey{}).(bool)
	return v
}

// Transport is an http.RoundTripper that serves each request with a
// handler, in the client's goroutine (a watch, or a log that follows, in a
// goroutine of its own, streaming through a pipe).
type Transport struct{ Handler http.Handler }

func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A shallow copy (the handler reads the headers, never writes them).
	r := req.WithContext(context.WithValue(req.Context(), inProcessKey{}, true))
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "in-process"
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	if isWatchRequest(req) {
		return t.stream(r)
	}
	w := &bufferedResponse{header: http.Header{}}
	t.Handler.ServeHTTP(w, r)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(w.code), StatusCode: w.code, Header: w.header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(w.body.Bytes())), ContentLength: int64(w.body.Len()), Request: req,
	}, nil
}

// isWatchRequest reports whether req asks for a stream: a watch, or a
// pod's log that follows.
func isWatchRequest(req *http.Request) bool {
	q := req.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || strings.Contains(req.URL.Path, "/watch/") || q.Get("follow") == "true"
}

// stream serves a long-running request in a goroutine of its own; the
// response is handed back once its headers are written, its body streams
// through a pipe. Closing the body, or cancelling the request's context,
// ends the handler.
func (t Transport) stream(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	r = r.WithContext(ctx)
	pr, pw := io.Pipe()
	w := &streamedResponse{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer cancel()
		t.Handler.ServeHTTP(w, r)
		w.writeHeaderOnce(http.StatusOK)
		_ = pw.Close()
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		_ = pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	return &http.Response{
		Status: http.StatusText(w.code), StatusCode: w.code, Header: w.header.Clone(),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1,
		Body: &streamBody{PipeReader: pr, cancel: cancel}, Request: r,
	}, nil
}

// bufferedResponse is an http.ResponseWriter that keeps the response.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *bufferedResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush does nothing: the whole response is handed over at the end.
func (w *bufferedResponse) Flush() {}

// streamedResponse is an http.ResponseWriter writing into a pipe; ready is
// closed once the status code is known.
type streamedResponse struct {
	header http.Header
	pw     *io.PipeWriter
	once   sync.Once
	code   int // set before ready is closed
	ready  chan struct{}
}

func (w *streamedResponse) Header() http.Header { return w.header }

func (w *streamedResponse) writeHeaderOnce(code int) {
	w.once.Do(func() {
		w.code = code
		close(w.ready)
	})
}

func (w *streamedResponse) WriteHeader(code int) { w.writeHeaderOnce(code) }

func (w *streamedResponse) Write(p []byte) (int, error) {
	w.writeHeaderOnce(http.StatusOK)
	return w.pw.Write(p)
}

// Flush does nothing: every Write reaches the reader through the pipe.
func (w *streamedResponse) Flush() {}

// streamBody is a streamed response's body; Close ends its handler.
type streamBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *streamBody) Close() error {
	b.cancel()
	return b.PipeReader.CloseWithError(errors.New("apiserver: in-process response body closed"))
}

// Client makes requests of the API: JSON bodies, JSON
// answers, a Status answer as an *apierrors.StatusError.
type Client struct {
	client *http.Client
	host   string
	// direct, when cfg's transport is a Transport with a bearer token,
	// sends Client's own requests straight to it, with the token and the
	// user agent set here: no http.Client and no wrapping round trippers
	// (which copy each request), a few microseconds per request (the
	// garbage collector sends one per object). HTTP still gives the
	// wrapped client.
	direct     http.RoundTripper
	authHeader string
	userAgent  string
}

// NewClient returns a Client for cfg.
func NewClient(cfg *rest.Config) Client {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		// An in-process configuration has no TLS or exec plugin that could
		// fail; keep a client that reports the error on every request.
		return Client{client: &http.Client{Transport: errTransport{err}}, host: cfg.Host}
	}
	out := Client{client: c, host: cfg.Host}
	if t, ok := cfg.Transport.(Transport); ok && cfg.BearerToken != "" && cfg.WrapTransport == nil {
		out.direct, out.authHeader, out.userAgent = t, "Bearer "+cfg.BearerToken, cfg.UserAgent
		if out.userAgent == "" {
			out.userAgent = rest.DefaultKubernetesUserAgent()
		}
	}
	return out
}

// Host is the server's base URL.
func (c Client) Host() string { return c.host }

// HTTP is the client's HTTP client (authentication included).
func (c Client) HTTP() *http.Client { return c.client }

// errTransport fails every request with err.
type errTransport struct{ err error }

func (t errTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, t.err }

// Do sends body (JSON-encoded unless it is []byte; contentType defaults to
// application/json) and decodes a 2xx answer into out, if not nil.
func (c Client) Do(ctx context.Context, method, path, contentType string, body, out any) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, rd)
	if err != nil {
		return err
	}
	if contentType == "" {
		contentType = "application/json"
	}
	if rd != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	return c.Send(req, out)
}

// Send sends req and decodes a 2xx answer into out, if not nil; any other
// answer is an error, an *apierrors.StatusError when the server sent a
// Status.
func (c Client) Send(req *http.Request, out any) error {
	var resp *http.Response
	var err error
	if c.direct != nil {
		req.Header.Set("Authorization", c.authHeader)
		req.Header.Set("User-Agent", c.userAgent)
		resp, err = c.direct.RoundTrip(req)
	} else {
		resp, err = c.client.Do(req)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var st metav1.Status
		if json.Unmarshal(data, &st) == nil && st.Kind == "Status" {
			return &apierrors.StatusError{ErrStatus: st}
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(resp.StatusCode), Reason: metav1.StatusReasonUnknown,
			Message: fmt.Sprintf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, bytes.TrimSpace(data))}}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
