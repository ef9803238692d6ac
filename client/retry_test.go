package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	irest "kloop.dev/kloop/internal/rest"
)

// throttle answers the first n requests it sees with code and a Retry-After
// header (retryAfter, "" for none), as API Priority and Fairness does, and
// passes the others on.
type throttle struct {
	next       http.RoundTripper
	code       int
	retryAfter string
	mu         sync.Mutex // guards n, seen
	n, seen    int
}

func (t *throttle) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.seen++
	refuse := t.n > 0
	if refuse {
		t.n--
	}
	t.mu.Unlock()
	if !refuse {
		return t.next.RoundTrip(req)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if t.retryAfter != "" {
		h.Set("Retry-After", t.retryAfter)
	}
	body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too many requests, please try again later","reason":"TooManyRequests","code":429}`
	return &http.Response{StatusCode: t.code, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestRetryAfter: a write or read answered 429 (or 5xx) with Retry-After
// (delay-seconds or an HTTP-date) is retried, as client-go's REST client
// does (API Priority and Fairness); without Retry-After, or after
// irest.MaxRetries, the error is returned; a context that ends while
// waiting ends the call.
func TestRetryAfter(t *testing.T) {
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		for _, tc := range []struct {
			name       string
			code, n    int
			retryAfter string
			wantErr    func(error) bool
			wantSeen   int
		}{
			{"429 retried", http.StatusTooManyRequests, 3, "0", nil, 4},
			{"503 retried", http.StatusServiceUnavailable, 2, "0", nil, 3},
			{"429 retried after an HTTP date", http.StatusTooManyRequests, 2, past, nil, 3},
			{"429 without Retry-After", http.StatusTooManyRequests, 1, "", apierrors.IsTooManyRequests, 1},
			{"retries run out", http.StatusTooManyRequests, irest.MaxRetries + 1, "0", apierrors.IsTooManyRequests, irest.MaxRetries + 1},
		} {
			name := strings.NewReplacer(" ", "-", "4", "x").Replace(strings.ToLower(tc.name))
			t.Run(tc.name, func(t *testing.T) {
				ctx := timeout(t)
				e := newEnv(t, ae, Options{})
				th := &throttle{next: e.http.Transport, code: tc.code, n: tc.n, retryAfter: tc.retryAfter}
				c, err := New(e.cfg, Options{Factory: e.factory, HTTPClient: &http.Client{Transport: th}})
				if err != nil {
					t.Fatal(err)
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: name}, Data: map[string]string{"a": "b"}}
				err = c.Create(ctx, cm)
				switch {
				case tc.wantErr == nil && err != nil:
					t.Fatalf("create: %v", err)
				case tc.wantErr != nil && !tc.wantErr(err):
					t.Fatalf("create: %v, want a TooManyRequests error", err)
				}
				if th.seen != tc.wantSeen {
					t.Fatalf("%d requests sent, want %d", th.seen, tc.wantSeen)
				}
				if tc.wantErr == nil && cm.ResourceVersion == "" {
					t.Fatal("the created object was not updated from the answer")
				}
			})
		}
		// The 429's Status has no details: the Retry-After header fills
		// Details.RetryAfterSeconds, in either form.
		for _, tc := range []struct {
			name, retryAfter string
			wantDelay        int
		}{
			{"delay-seconds", "3600", 3600},
			{"HTTP-date", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 3600},
		} {
			t.Run("context ends while waiting, Retry-After "+tc.name, func(t *testing.T) {
				e := newEnv(t, ae, Options{})
				th := &throttle{next: e.http.Transport, code: http.StatusTooManyRequests, n: 1, retryAfter: tc.retryAfter}
				c, err := New(e.cfg, Options{Factory: e.factory, HTTPClient: &http.Client{Transport: th}})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				start := time.Now()
				err = c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "cm2"}})
				if !errors.Is(err, context.DeadlineExceeded) || !apierrors.IsTooManyRequests(err) {
					t.Fatalf("create: %v, want the context's error wrapping the 429", err)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Fatalf("returned after %v", d)
				}
				// An HTTP-date has whole seconds: an hour ahead is
				// 3599 to 3600 s by the time it is read.
				if d, ok := apierrors.SuggestsClientDelay(err); !ok || d < tc.wantDelay-1 || d > tc.wantDelay {
					t.Fatalf("suggested delay %d, %v; want %d (the Retry-After header)", d, ok, tc.wantDelay)
				}
				if th.seen != 1 {
					t.Fatalf("%d requests sent, want 1", th.seen)
				}
			})
		}
	})
}

// countingLimiter is a flowcontrol.RateLimiter that counts the waits and
// refuses once refuse is set.
type countingLimiter struct {
	mu     sync.Mutex // guards waits
	waits  int
	refuse error
}

func (l *countingLimiter) TryAccept() bool { return true }
func (l *countingLimiter) Accept()         {}
func (l *countingLimiter) Stop()           {}
func (l *countingLimiter) QPS() float32    { return 1 }
func (l *countingLimiter) Wait(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits++
	return l.refuse
}

// TestClientSideRateLimit: rest.Config's RateLimiter is waited on before
// every request, retries included, and its refusal fails the call without
// a request; QPS > 0 makes a token bucket (burst 10 by default); QPS 0 or
// less, none.
func TestClientSideRateLimit(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		lim := &countingLimiter{}
		cfg := *e.cfg
		cfg.RateLimiter = lim
		th := &throttle{next: e.http.Transport, code: http.StatusTooManyRequests, n: 1, retryAfter: "0"}
		c, err := New(&cfg, Options{Factory: e.factory, HTTPClient: &http.Client{Transport: th}})
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "limited"}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if lim.waits != 2 || th.seen != 2 {
			t.Fatalf("%d waits for %d requests (one retried), want 2 and 2", lim.waits, th.seen)
		}
		lim.refuse = errors.New("rate: Wait(n=1) would exceed context deadline")
		err = c.Delete(ctx, cm)
		if err == nil || !strings.Contains(err.Error(), "client-side rate limit") || th.seen != 2 {
			t.Fatalf("delete with the limiter refusing: %v after %d requests, want the limiter's error and no request", err, th.seen)
		}
	})
	for _, tc := range []struct {
		qps   float32
		burst int
		want  bool
	}{{0, 0, false}, {-1, 0, false}, {5, 0, true}, {20, 30, true}} {
		c, err := New(&rest.Config{Host: "http://127.0.0.1:1", QPS: tc.qps, Burst: tc.burst}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.limiter != nil; got != tc.want {
			t.Errorf("QPS %v Burst %d: limited %v, want %v", tc.qps, tc.burst, got, tc.want)
		}
	}
}
