package restlimit

import (
	"testing"

	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFor(t *testing.T) {
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
			l := For(&tt.cfg)
			if (l == nil) != tt.wantNil {
				t.Fatalf("For = %v, want nil %v", l, tt.wantNil)
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
	l := For(&rest.Config{QPS: 0.001})
	for i := range 10 {
		if !l.TryAccept() {
			t.Fatalf("request %d of the default burst refused", i+1)
		}
	}
	if l.TryAccept() {
		t.Fatal("an 11th request passed a burst of 10")
	}
}
