package rest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBaseURL(t *testing.T) {
	tests := []struct {
		name string
		cfg  rest.Config
		want string
	}{
		{"no host", rest.Config{}, "http://localhost"},
		{"host:port", rest.Config{Host: "h:8080"}, "http://h:8080"},
		{"host:port with a CA", rest.Config{Host: "h:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("x")}}, "https://h:6443"},
		{"host:port with a client certificate", rest.Config{Host: "h:6443", TLSClientConfig: rest.TLSClientConfig{CertFile: "c"}}, "https://h:6443"},
		{"host:port, insecure", rest.Config{Host: "h:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "https://h:6443"},
		{"URL wins over TLS", rest.Config{Host: "http://h:80", TLSClientConfig: rest.TLSClientConfig{CAFile: "ca"}}, "http://h:80"},
		{"path prefix", rest.Config{Host: "https://h:6443/prefix"}, "https://h:6443/prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := BaseURL(&tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if u.String() != tt.want {
				t.Fatalf("BaseURL = %s, want %s", u, tt.want)
			}
		})
	}
	if _, err := BaseURL(&rest.Config{Host: "h:1/path"}); err == nil {
		t.Error("a host:port with a path but no scheme accepted")
	}
}

func TestUserAgent(t *testing.T) {
	if got := UserAgent(&rest.Config{UserAgent: "mine/1"}); got != "mine/1" {
		t.Errorf("UserAgent = %q, want the config's", got)
	}
	if got, want := UserAgent(&rest.Config{}), rest.DefaultKubernetesUserAgent(); got != want {
		t.Errorf("UserAgent = %q, want client-go's default %q", got, want)
	}
}

func TestRateLimiter(t *testing.T) {
	given := flowcontrol.NewFakeAlwaysRateLimiter()
	tests := []struct {
		name      string
		cfg       rest.Config
		wantNil   bool
		wantGiven bool
		qps       float32
	}{
		{"none", rest.Config{}, true, false, 0},
		{"negative QPS", rest.Config{QPS: -1, Burst: 5}, true, false, 0},
		{"the config's limiter wins", rest.Config{RateLimiter: given, QPS: 50}, false, true, 0},
		{"QPS and burst", rest.Config{QPS: 20, Burst: 40}, false, false, 20},
		{"QPS, default burst", rest.Config{QPS: 3}, false, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := RateLimiter(&tt.cfg)
			if (l == nil) != tt.wantNil {
				t.Fatalf("RateLimiter = %v, want nil %v", l, tt.wantNil)
			}
			if tt.wantGiven && l != given {
				t.Fatal("the config's RateLimiter was not returned")
			}
			if tt.qps != 0 && l.QPS() != tt.qps {
				t.Fatalf("QPS %v, want %v", l.QPS(), tt.qps)
			}
		})
	}
	// A bucket of burst 10 (the default) lets 10 through at once, not 11.
	l := RateLimiter(&rest.Config{QPS: 0.001})
	for i := range 10 {
		if !l.TryAccept() {
			t.Fatalf("request %d of the default burst refused", i+1)
		}
	}
	if l.TryAccept() {
		t.Fatal("an 11th request passed a burst of 10")
	}
}

// refusingLimiter refuses every wait with err.
type refusingLimiter struct {
	flowcontrol.RateLimiter
	err error
}

func (l refusingLimiter) Wait(context.Context) error { return l.err }

func TestThrottle(t *testing.T) {
	refusal := errors.New("rate: Wait(n=1) would exceed context deadline")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		l       flowcontrol.RateLimiter
		wantErr []error // errors.Is each; nil: no error
	}{
		{"no limiter", t.Context(), nil, nil},
		{"limiter lets it through", t.Context(), flowcontrol.NewFakeAlwaysRateLimiter(), nil},
		{"refusal", t.Context(), refusingLimiter{err: refusal}, []error{refusal}},
		{"refusal once ctx ended wraps ctx's error", ended, refusingLimiter{err: refusal}, []error{refusal, context.Canceled}},
		{"token bucket with ctx ended", ended, flowcontrol.NewTokenBucketRateLimiter(0.001, 1), []error{context.Canceled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Throttle(tt.ctx, tt.l)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Throttle: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "client-side rate limit: ") {
				t.Fatalf("Throttle: %v, want a client-side rate limit error", err)
			}
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("Throttle: %v, want it to wrap %v", err, want)
				}
			}
		})
	}
}
