package reflector_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/reflector"
)

// journal records, in order, the limiter's waits and the requests that
// reach the transport.
type journal struct {
	mu      sync.Mutex // guards entries
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.entries = append(j.entries, s)
	j.mu.Unlock()
}

func (j *journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.entries, " ")
}

// waitJournal polls j until cond holds of it, failing after 10 s.
func waitJournal(t *testing.T, j *journal, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(j.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("journal %q: the request did not wait on the rate limiter", j.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// journalLimiter is a flowcontrol.RateLimiter whose Wait records itself in
// the journal, then blocks until a token is put in tokens (nil tokens: no
// blocking) or ctx ends.
type journalLimiter struct {
	j      *journal
	tokens chan struct{}
}

func (l *journalLimiter) Wait(ctx context.Context) error {
	l.j.add("wait")
	if l.tokens == nil {
		return nil
	}
	select {
	case <-l.tokens:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (l *journalLimiter) TryAccept() bool { return true }
func (l *journalLimiter) Accept()         {}
func (l *journalLimiter) Stop()           {}
func (l *journalLimiter) QPS() float32    { return 0 }

// journalTransport records each request ("list" or "watch") that reaches
// the server.
type journalTransport struct {
	j    *journal
	next http.RoundTripper
}

func (t *journalTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") == "true" {
		t.j.add("watch")
	} else {
		t.j.add("list")
	}
	return t.next.RoundTrip(req)
}

// TestRESTRateLimiter runs on both servers: each list page and each watch
// of the REST ListerWatcher waits on the rest.Config's RateLimiter before
// its request goes out, and a context cancelled during that wait ends the
// request with an error that wraps context.Canceled, sending nothing.
func TestRESTRateLimiter(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx := t.Context()
		tg := newTarget(t, env)
		for i := range 3 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: fmt.Sprintf("x-cm-%d", i), Labels: map[string]string{"test": "limiter"}}}
			if _, err := tg.cs.CoreV1().ConfigMaps(env.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		j := &journal{}
		lim := &journalLimiter{j: j}
		cfg := env.Config()
		cfg.QPS = 1 // ignored: the RateLimiter wins
		cfg.RateLimiter = lim
		lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, configMapsGVR, env.Namespace, reflector.RESTOptions[*corev1.ConfigMap]{
			HTTPClient:    env.HTTPClient(func(rt http.RoundTripper) http.RoundTripper { return &journalTransport{j: j, next: rt} }),
			LabelSelector: "test=limiter", // not the namespace's kube-root-ca.crt, which sorts before x-cm-*
		})
		if err != nil {
			t.Fatal(err)
		}

		// Three pages of one object, then a watch from the list.
		opts := metav1.ListOptions{Limit: 1}
		var names []string
		rv := ""
		for {
			l, err := lw.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if rv == "" {
				rv = l.ResourceVersion
			}
			for _, o := range l.Items {
				names = append(names, o.Name)
			}
			if l.Continue == "" {
				break
			}
			opts = metav1.ListOptions{Limit: 1, Continue: l.Continue}
		}
		if len(names) != 3 {
			t.Fatalf("listed %v, want 3 config maps", names)
		}
		timeout := int64(5)
		w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, TimeoutSeconds: &timeout})
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		if got, want := j.String(), "wait list wait list wait list wait watch"; got != want {
			t.Errorf("journal %q, want %q", got, want)
		}

		// A limiter that holds every request: cancelling the context while
		// the request waits returns a wrapped error, and nothing is sent.
		j2 := &journal{}
		cfg.RateLimiter = &journalLimiter{j: j2, tokens: make(chan struct{})}
		lw, err = reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, configMapsGVR, env.Namespace, reflector.RESTOptions[*corev1.ConfigMap]{
			HTTPClient: env.HTTPClient(func(rt http.RoundTripper) http.RoundTripper { return &journalTransport{j: j2, next: rt} }),
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"list", "watch"} {
			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				var err error
				if verb == "list" {
					_, err = lw.List(cctx, metav1.ListOptions{})
				} else {
					var w reflector.Watch[*corev1.ConfigMap]
					if w, err = lw.Watch(cctx, metav1.ListOptions{ResourceVersion: rv}); w != nil {
						w.Stop()
					}
				}
				errc <- err
			}()
			waitJournal(t, j2, func(s string) bool { return strings.HasSuffix(s, "wait") })
			cancel()
			err := <-errc
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "rate limit") {
				t.Errorf("%s cancelled while waiting on the rate limiter: error %v, want one wrapping context.Canceled", verb, err)
			}
		}
		if got := j2.String(); got != "wait wait" {
			t.Errorf("journal %q: requests went out without their token", got)
		}
	})
}

// TestReflectorStopsWhileRateLimited: a reflector whose list waits on the
// rate limiter stops when its context is cancelled.
func TestReflectorStopsWhileRateLimited(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			j := &journal{}
			cfg := &rest.Config{Host: "http://127.0.0.1:1", RateLimiter: &journalLimiter{j: j, tokens: make(chan struct{})}}
			lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, configMapsGVR, "", reflector.RESTOptions[*corev1.ConfigMap]{
				HTTPClient: &http.Client{Transport: &journalTransport{j: j, next: http.DefaultTransport}},
			})
			if err != nil {
				t.Fatal(err)
			}
			r, err := reflector.New[*corev1.ConfigMap](lw, newMapStore(eventMessageCM), reflector.Options{DisableWatchList: !watchList})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			waitJournal(t, j, func(s string) bool { return s == "wait" })
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := j.String(); got != "wait" {
				t.Errorf("journal %q, want only the wait", got)
			}
		})
	}
}

func eventMessageCM(c *corev1.ConfigMap) string { return c.Data["m"] }

// cannedTransport answers every list with an empty ConfigMapList and every
// watch with an empty stream, counting the requests.
type cannedTransport struct {
	mu       sync.Mutex // guards requests
	requests int
}

func (c *cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	body := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`
	if req.URL.Query().Get("watch") == "true" {
		body = ""
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}, nil
}

// TestRESTQPS: QPS and Burst of the rest.Config make a token bucket (burst
// 10 when Burst is not set) for the lister's lists and watches; QPS 0 or
// negative means no limit. Time is synctest's: the test measures how long
// n requests take.
func TestRESTQPS(t *testing.T) {
	tests := []struct {
		name       string
		qps        float32
		burst      int
		n          int
		watch      bool
		wantMillis int64
	}{
		{"qps 2 burst 3, 7 lists", 2, 3, 7, false, 2000},  // 3 at once, then one per 500 ms
		{"qps 2 burst 3, 7 watches", 2, 3, 7, true, 2000}, // watches take tokens too
		{"qps 10 default burst 10, 15 lists", 10, 0, 15, false, 500},
		{"qps 0: no limit", 0, 0, 100, false, 0},
		{"qps -1: no limit", -1, 0, 100, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &cannedTransport{}
				cfg := &rest.Config{Host: "http://example.invalid", QPS: tc.qps, Burst: tc.burst}
				lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, configMapsGVR, "ns", reflector.RESTOptions[*corev1.ConfigMap]{
					HTTPClient: &http.Client{Transport: tr},
				})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				for range tc.n {
					if tc.watch {
						w, err := lw.Watch(t.Context(), metav1.ListOptions{})
						if err != nil {
							t.Fatal(err)
						}
						w.Stop()
					} else if _, err := lw.List(t.Context(), metav1.ListOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if got := time.Since(start).Milliseconds(); got != tc.wantMillis {
					t.Errorf("%d requests took %d ms, want %d ms", tc.n, got, tc.wantMillis)
				}
				if tr.requests != tc.n {
					t.Errorf("%d requests sent, want %d", tr.requests, tc.n)
				}
			})
		})
	}
}

// TestRESTRateLimitDeadline: a request whose context's deadline comes
// before its token fails at once with a wrapped error instead of sending
// the request.
func TestRESTRateLimitDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &cannedTransport{}
		cfg := &rest.Config{Host: "http://example.invalid", QPS: 1, Burst: 1}
		lw, err := reflector.NewRESTListerWatcher[*corev1.ConfigMap](cfg, configMapsGVR, "ns", reflector.RESTOptions[*corev1.ConfigMap]{
			HTTPClient: &http.Client{Transport: tr},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lw.List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err = lw.List(ctx, metav1.ListOptions{})
		if err == nil || !strings.Contains(err.Error(), "list configmaps: client-side rate limit") {
			t.Errorf("List past its deadline: %v", err)
		}
		if tr.requests != 1 {
			t.Errorf("%d requests sent, want 1", tr.requests)
		}
	})
}
