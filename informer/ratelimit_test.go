package informer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reflector"
)

// countingLimiter is a flowcontrol.RateLimiter that counts its waits and
// never holds a request.
type countingLimiter struct{ waits atomic.Int64 }

func (l *countingLimiter) Wait(ctx context.Context) error { l.waits.Add(1); return ctx.Err() }
func (l *countingLimiter) TryAccept() bool                { return true }
func (l *countingLimiter) Accept()                        {}
func (l *countingLimiter) Stop()                          {}
func (l *countingLimiter) QPS() float32                   { return 0 }

// TestFactoryRateLimiter runs on both servers: every list and watch of the
// factory's informers waits on the rest.Config's RateLimiter.
func TestFactoryRateLimiter(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
				ctx := informer.Timeout(t)
				env := newEnv(t, ae)
				env.createPod(t, ctx, env.Namespace, "a", nil)
				lim := &countingLimiter{}
				cfg := rest.CopyConfig(env.cfg)
				cfg.RateLimiter = lim
				f, err := informer.NewFactory(cfg, informer.FactoryOptions{
					HTTPClient: env.client,
					Reflector:  reflector.Options{DisableWatchList: !watchList},
				})
				if err != nil {
					t.Fatal(err)
				}
				pods, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{Namespace: env.Namespace})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := informer.InformerFor[*corev1.ConfigMap](f, informer.Scope{Namespace: env.Namespace}); err != nil {
					t.Fatal(err)
				}
				startFactory(t, f)
				if err := f.WaitForCacheSync(ctx); err != nil {
					t.Fatal(err)
				}
				if _, ok := pods.GetByKey(env.Namespace + "/a"); !ok {
					t.Fatal("pod a not cached")
				}
				// Once both watches are open, no request is in flight: each
				// one waited once on the limiter.
				requests := func() int64 {
					pw, pl := env.net.counts("pods")
					cw, cl := env.net.counts("configmaps")
					if pw == 0 || cw == 0 {
						return -1
					}
					return int64(pw + pl + cw + cl)
				}
				informer.WaitUntil(t, ctx, "both watches", func() bool { return requests() > 0 })
				if got, want := lim.waits.Load(), requests(); got != want {
					t.Errorf("%d waits on the rate limiter for %d requests", got, want)
				}
			})
		})
	}
}

// TestFactoryRateLimiterShared: the factory's listers share one client-side
// rate limit — the config's RateLimiter, or one token bucket made of QPS and
// Burst — and the config the factory hands back is the caller's.
func TestFactoryRateLimiterShared(t *testing.T) {
	mine := flowcontrol.NewTokenBucketRateLimiter(3, 4)
	tests := []struct {
		name    string
		cfg     rest.Config
		wantQPS float32 // 0: no limiter
	}{
		{"QPS and Burst", rest.Config{QPS: 5, Burst: 7}, 5},
		{"QPS, default burst", rest.Config{QPS: 20}, 20},
		{"RateLimiter", rest.Config{QPS: 50, RateLimiter: mine}, 3},
		{"QPS 0", rest.Config{}, 0},
		{"QPS negative", rest.Config{QPS: -1, Burst: 5}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Host = "http://example.invalid"
			f, err := informer.NewFactory(&tc.cfg, informer.FactoryOptions{Mapper: informer.StaticMapper(meta.NewDefaultRESTMapper(nil))})
			if err != nil {
				t.Fatal(err)
			}
			got := f.ListerRateLimiter()
			switch {
			case tc.wantQPS == 0 && got != nil:
				t.Errorf("limiter %v, want none", got)
			case tc.wantQPS != 0 && (got == nil || got.QPS() != tc.wantQPS):
				t.Errorf("limiter %v, want one of %v qps", got, tc.wantQPS)
			case tc.cfg.RateLimiter != nil && got != tc.cfg.RateLimiter:
				t.Errorf("limiter %v, want the config's", got)
			}
			if rl := f.Config().RateLimiter; rl != tc.cfg.RateLimiter {
				t.Errorf("Config().RateLimiter %v, want the caller's %v", rl, tc.cfg.RateLimiter)
			}
		})
	}
}

// fakeAPI answers lists with an empty list and holds watches open until
// their request ends; it counts the requests that reach it.
type fakeAPI struct{ requests atomic.Int64 }

// heldBody is a watch body with no events that ends with its request.
type heldBody struct{ ctx context.Context }

func (b heldBody) Read([]byte) (int, error) { <-b.ctx.Done(); return 0, b.ctx.Err() }
func (b heldBody) Close() error             { return nil }

func (f *fakeAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	f.requests.Add(1)
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Request: req}
	if req.URL.Query().Get("watch") == "true" {
		resp.Body = heldBody{req.Context()}
		return resp, nil
	}
	resp.Body = io.NopCloser(strings.NewReader(`{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
	return resp, nil
}

// TestFactoryQPSShared: a factory built from a config with QPS 1 and Burst
// 1 passes the lists and watches of all its informers through one token
// bucket: the four requests of two informers (a list and a watch each)
// take three seconds, not one as with a bucket per informer.
func TestFactoryQPSShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{}
		m := meta.NewDefaultRESTMapper(nil)
		m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
		m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
		f, err := informer.NewFactory(&rest.Config{Host: "http://example.invalid", QPS: 1, Burst: 1}, informer.FactoryOptions{
			Mapper:     informer.StaticMapper(m),
			HTTPClient: &http.Client{Transport: api},
			Reflector:  reflector.Options{DisableWatchList: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := informer.InformerFor[*corev1.Pod](f, informer.Scope{}); err != nil {
			t.Fatal(err)
		}
		if _, err := informer.InformerFor[*corev1.ConfigMap](f, informer.Scope{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- f.Start(ctx) }()
		for api.requests.Load() < 4 {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("4 requests took %v, want 3s (one bucket of 1 qps, burst 1)", d)
		}
		synctest.Wait()
		if n := api.requests.Load(); n != 4 {
			t.Errorf("%d requests, want 4", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
