package rest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// MaxRetryAfter bounds the wait a Retry-After header can ask for.
const MaxRetryAfter = 24 * 60 * 60 // seconds: one day

// ParseRetryAfter reads a Retry-After header value: delay-seconds ("7") or
// an HTTP-date (RFC 9110: IMF-fixdate, or the obsolete RFC 850 and asctime
// forms), the latter as the whole seconds from now until then, rounded up.
// The result is within [0, MaxRetryAfter]: a date in the past is 0. ok is
// false when h is empty, unreadable or a negative number.
func ParseRetryAfter(h string, now time.Time) (seconds int, ok bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	s, err := strconv.Atoi(h)
	if err != nil {
		t, err := http.ParseTime(h)
		if err != nil {
			return 0, false
		}
		d := t.Sub(now)
		if d <= 0 {
			return 0, true
		}
		if d >= MaxRetryAfter*time.Second {
			return MaxRetryAfter, true
		}
		s = int((d + time.Second - 1) / time.Second)
	} else if s < 0 {
		return 0, false
	}
	return min(s, MaxRetryAfter), true
}

// RetryWait is how long to wait before sending again a request answered
// with code and header h, as client-go's REST client decides it: the
// Retry-After of a 429 (Too Many Requests: API Priority and Fairness) or a
// 5xx; negative for other answers or without a readable Retry-After.
func RetryWait(code int, h http.Header, now time.Time) time.Duration {
	if code != http.StatusTooManyRequests && code < 500 {
		return -1
	}
	s, ok := ParseRetryAfter(h.Get("Retry-After"), now)
	if !ok {
		return -1
	}
	return time.Duration(s) * time.Second
}

// MaxRetries is how many times Retry sends a request again, as client-go's
// REST client.
const MaxRetries = 10

// Retry calls attempt — one request — until it returns a negative wait,
// each call first waiting for l (Throttle; nil: no limit). A wait of zero
// or more (the answer's RetryWait) makes Retry wait that long and call
// attempt again, up to MaxRetries times; when they run out the last
// attempt's result and error are returned. what names the request in
// Retry's own errors: "<what>: client-side rate limit: …" when l refuses,
// and "<what>: <ctx's cause> (waiting to retry after: <last error>)" when
// ctx ends while waiting.
func Retry[T any](ctx context.Context, what string, l flowcontrol.RateLimiter, attempt func(ctx context.Context) (T, time.Duration, error)) (T, error) {
	for retries := 0; ; retries++ {
		if err := Throttle(ctx, l); err != nil {
			var zero T
			return zero, fmt.Errorf("%s: %w", what, err)
		}
		v, wait, err := attempt(ctx)
		if wait < 0 || retries == MaxRetries {
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			var zero T
			return zero, fmt.Errorf("%s: %w (waiting to retry after: %w)", what, context.Cause(ctx), err)
		case <-t.C:
		}
	}
}
