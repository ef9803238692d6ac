package rest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/flowcontrol"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		h      string
		want   int
		wantOK bool
	}{
		{"", 0, false}, {"   ", 0, false}, {"7", 7, true}, {" 7 ", 7, true}, {"0", 0, true},
		{"-3", 0, false}, {"soon", 0, false}, {"1.5", 0, false}, {"99999999", MaxRetryAfter, true},
		{"99999999999999999999999", 0, false},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10, true},
		{now.Add(10*time.Second + time.Millisecond).Format(http.TimeFormat), 10, true}, // HTTP-dates have whole seconds
		{now.Add(-10 * time.Second).Format(http.TimeFormat), 0, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), MaxRetryAfter, true},
		{"Fri, 31 Dec 9999 23:59:59 GMT", MaxRetryAfter, true},     // past what a Duration holds
		{"Thursday, 01-Jan-26 00:00:09 GMT", 9, true},              // RFC 850
		{"Thu Jan  1 00:00:08 2026", 8, true},                      // asctime
		{now.Add(10 * time.Second).Format(time.RFC3339), 0, false}, // not an HTTP-date
	}
	for _, tc := range tests {
		got, ok := ParseRetryAfter(tc.h, now)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %d, %v; want %d, %v", tc.h, got, ok, tc.want, tc.wantOK)
		}
	}
	// A date a fraction of a second ahead rounds up.
	if got, _ := ParseRetryAfter(now.Add(3*time.Second).Format(http.TimeFormat), now.Add(-500*time.Millisecond)); got != 4 {
		t.Errorf("3.5 s ahead: %d, want 4", got)
	}
}

// FuzzParseRetryAfter: any header gives a wait within [0, MaxRetryAfter],
// and a number gives itself (clamped).
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "7", "-1", "86401", "Wed, 21 Oct 2015 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, h string) {
		s, ok := ParseRetryAfter(h, now)
		if s < 0 || s > MaxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %d, out of [0, %d]", h, s, MaxRetryAfter)
		}
		if !ok && s != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %d without ok", h, s)
		}
		if w := RetryWait(http.StatusTooManyRequests, http.Header{"Retry-After": {h}}, now); (w >= 0) != ok || ok && w != time.Duration(s)*time.Second {
			t.Fatalf("RetryWait(429, %q) = %v; ParseRetryAfter = %d, %v", h, w, s, ok)
		}
	})
}

func TestRetryWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		code int
		h    string
		want time.Duration
	}{
		{429, "3", 3 * time.Second},
		{429, "0", 0},
		{429, now.Add(2 * time.Second).Format(http.TimeFormat), 2 * time.Second},
		{429, "", -1},
		{429, "-1", -1},
		{503, "1", time.Second},
		{500, "1", time.Second},
		{504, "bad", -1},
		{409, "1", -1},
		{404, "1", -1},
		{200, "1", -1},
	}
	for _, tc := range tests {
		if got := RetryWait(tc.code, http.Header{"Retry-After": {tc.h}}, now); got != tc.want {
			t.Errorf("RetryWait(%d, %q) = %v, want %v", tc.code, tc.h, got, tc.want)
		}
	}
}

// countingLimiter counts its waits and refuses from the refuseAt-th on
// (0: never).
type countingLimiter struct {
	flowcontrol.RateLimiter
	waits, refuseAt int
}

func (l *countingLimiter) Wait(context.Context) error {
	l.waits++
	if l.refuseAt > 0 && l.waits >= l.refuseAt {
		return errors.New("refused")
	}
	return nil
}

func TestRetry(t *testing.T) {
	tooMany := apierrors.NewTooManyRequests("slow down", 1)
	tests := []struct {
		name string
		// waits are the attempts' waits (the last repeats); nil errs
		// mean the attempt succeeds when its wait is negative.
		waits     []time.Duration
		refuseAt  int
		wantCalls int
		wantTime  time.Duration
		wantErr   func(error) bool
	}{
		{"success at once", []time.Duration{-1}, 0, 1, 0, nil},
		{"retried after the waits", []time.Duration{time.Second, 3 * time.Second, -1}, 0, 3, 4 * time.Second, nil},
		{"Retry-After 0 retried at once", []time.Duration{0, -1}, 0, 2, 0, nil},
		{"retries run out: the last error", []time.Duration{time.Second}, 0, MaxRetries + 1, MaxRetries * time.Second, apierrors.IsTooManyRequests},
		{"throttle refuses before the first", []time.Duration{-1}, 1, 0, 0, func(err error) bool {
			return err.Error() == "client: POST /x: client-side rate limit: refused"
		}},
		{"throttle refuses a retry", []time.Duration{time.Second}, 3, 2, 2 * time.Second, func(err error) bool {
			return err.Error() == "client: POST /x: client-side rate limit: refused" && !apierrors.IsTooManyRequests(err)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &countingLimiter{refuseAt: tt.refuseAt}
				calls := 0
				start := time.Now()
				v, err := Retry(t.Context(), "client: POST /x", l, func(context.Context) (string, time.Duration, error) {
					w := tt.waits[min(calls, len(tt.waits)-1)]
					calls++
					if w < 0 {
						return "ok", w, nil
					}
					return "", w, tooMany
				})
				if calls != tt.wantCalls {
					t.Errorf("%d attempts, want %d", calls, tt.wantCalls)
				}
				if l.waits != max(calls, tt.refuseAt) {
					t.Errorf("%d throttle waits for %d attempts", l.waits, calls)
				}
				if d := time.Since(start); d != tt.wantTime {
					t.Errorf("took %v, want %v", d, tt.wantTime)
				}
				switch {
				case tt.wantErr == nil && (err != nil || v != "ok"):
					t.Errorf("Retry = %q, %v; want ok", v, err)
				case tt.wantErr != nil && (err == nil || !tt.wantErr(err)):
					t.Errorf("Retry: %v fails its check", err)
				}
			})
		})
	}
}

// A context that ends while Retry waits ends it with an error wrapping its
// cause and the last answer's error.
func TestRetryContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		tooMany := apierrors.NewTooManyRequests("slow down", 3600)
		start := time.Now()
		calls := 0
		_, err := Retry(ctx, "client: GET /y", nil, func(context.Context) (int, time.Duration, error) {
			calls++
			return 0, time.Hour, tooMany
		})
		if !errors.Is(err, context.DeadlineExceeded) || !apierrors.IsTooManyRequests(err) {
			t.Fatalf("Retry: %v, want the context's error wrapping the 429", err)
		}
		if want := "client: GET /y: context deadline exceeded (waiting to retry after: slow down)"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if calls != 1 || time.Since(start) != 5*time.Second {
			t.Errorf("%d attempts in %v, want 1 in 5s", calls, time.Since(start))
		}
	})
}
