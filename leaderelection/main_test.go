package leaderelection

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handlerTransport serves requests with the embedded API server's handler in
// the calling goroutine, with no network: inside a testing/synctest bubble
// the whole client–server exchange then runs on the bubble's fake clock
// (a real TCP connection is never "durably blocked", so time would not
// advance while one is open).
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	// Give the handler what an http.Server would: a body even when empty.
	in := req.Clone(req.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RemoteAddr = "127.0.0.1:1"
	in.RequestURI = req.URL.RequestURI()
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// fault is what a faultTransport does to a request.
type fault int

const (
	pass        fault = iota // forward it
	serverError              // answer 500 with a Status
	hang                     // block until the request's context is done
)

// faultTransport forwards requests to next unless a fault is set.
type faultTransport struct {
	next http.RoundTripper

	mu    sync.Mutex // guards fault, calls, before
	fault fault
	calls int // requests seen while a fault was set
	// before, when set, is called with each request before it is
	// forwarded (also while a fault is set).
	before func(*http.Request)
}

func (f *faultTransport) setBefore(fn func(*http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before = fn
}

func (f *faultTransport) set(x fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.calls = x, 0
}

func (f *faultTransport) faulted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	x, before := f.fault, f.before
	if x != pass {
		f.calls++
	}
	f.mu.Unlock()
	if before != nil {
		before(req)
	}
	switch x {
	case serverError:
		if req.Body != nil {
			_ = req.Body.Close()
		}
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError, Message: "injected failure"}
		b, _ := json.Marshal(st)
		return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req}, nil
	case hang:
		if req.Body != nil {
			_ = req.Body.Close()
		}
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return f.next.RoundTrip(req)
}

// newServer returns an embedded API server that is not listening: configs
// from inProcess reach its handler directly.
func newServer(t *testing.T) *apiserver.Server {
	t.Helper()
	srv, err := apiserver.New(apiserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// inProcess returns a client configuration for srv's handler through a
// faultTransport, which it returns too.
func inProcess(srv *apiserver.Server) (*rest.Config, *faultTransport) {
	ft := &faultTransport{next: handlerTransport{srv.Handler()}}
	return &rest.Config{Host: "http://apiserver.kloop.test", BearerToken: srv.Token(), QPS: -1, Transport: ft}, ft
}

// leader runs an Elector and records its leadership.
type leader struct {
	e      *Elector
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // Run's result, once done is closed

	started chan struct{} // closed when onStarted is called
	stopped chan struct{} // closed when onStarted returns

	mu        sync.Mutex // guards the fields below
	leaderCtx context.Context
	startedAt time.Time
	stoppedAt time.Time
	// leaderAtStop is IsLeader once onStarted's context was done.
	leaderAtStop bool
}

// startLeader runs e.Run in a goroutine; the test's cleanup cancels it and
// waits for it.
func startLeader(t *testing.T, e *Elector) *leader {
	ctx, cancel := context.WithCancel(context.Background())
	l := &leader{e: e, cancel: cancel, done: make(chan struct{}), started: make(chan struct{}), stopped: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		<-l.done
	})
	go func() {
		defer close(l.done)
		l.err = e.Run(ctx, func(ctx context.Context) {
			l.mu.Lock()
			l.leaderCtx, l.startedAt = ctx, time.Now()
			l.mu.Unlock()
			close(l.started)
			<-ctx.Done()
			l.mu.Lock()
			l.stoppedAt = time.Now()
			l.leaderAtStop = e.IsLeader()
			l.mu.Unlock()
			close(l.stopped)
		})
	}()
	return l
}

// wait waits for Run to return and returns its result.
func (l *leader) wait() error {
	<-l.done
	return l.err
}

func (l *leader) times() (started, stopped time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.startedAt, l.stoppedAt
}

func (l *leader) isLeaderAtStop() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leaderAtStop
}

func (l *leader) ctx() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leaderCtx
}

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func newElector(t *testing.T, cfg *rest.Config, id string, opts Options) *Elector {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "kloop-election"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	opts.Identity = id
	e, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
