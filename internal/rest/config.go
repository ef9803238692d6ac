package rest

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// BaseURL returns the URL of cfg's server with its path prefix, if any
// (https://h:6443/prefix), as client-go's rest.DefaultServerUrlFor reads
// it: Host (default "localhost"), https when the config has a CA, a client
// certificate or Insecure set and Host names no scheme.
func BaseURL(cfg *rest.Config) (*url.URL, error) {
	host := cfg.Host
	if host == "" {
		host = "localhost"
	}
	tls := len(cfg.CAFile) != 0 || len(cfg.CAData) != 0 || len(cfg.CertFile) != 0 || len(cfg.CertData) != 0 || cfg.Insecure
	u, _, err := rest.DefaultServerURL(host, "", schema.GroupVersion{}, tls)
	return u, err
}

// UserAgent returns cfg's UserAgent, or client-go's default one.
func UserAgent(cfg *rest.Config) string {
	if cfg.UserAgent != "" {
		return cfg.UserAgent
	}
	return rest.DefaultKubernetesUserAgent()
}

// DefaultBurst is client-go's rest.DefaultBurst: the burst of a QPS given
// without one.
const DefaultBurst = 10

// RateLimiter returns the client-side rate limiter of cfg, as client-go's
// REST client builds it: cfg.RateLimiter if set, else a new token bucket of
// cfg.QPS (burst cfg.Burst, default DefaultBurst) when QPS > 0; nil when
// QPS is 0 or negative, which means no client-side limit here as with
// controller-runtime's config since v0.21 (API Priority and Fairness
// protects the server; client-go itself would use 5 qps). Callers that must
// share one bucket call it once and share what it returns.
func RateLimiter(cfg *rest.Config) flowcontrol.RateLimiter {
	if cfg.RateLimiter != nil {
		return cfg.RateLimiter
	}
	if cfg.QPS > 0 {
		burst := cfg.Burst
		if burst <= 0 {
			burst = DefaultBurst
		}
		return flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, burst)
	}
	return nil
}

// Throttle waits for l (nil: no limit, no wait). Its refusal is an error
// "client-side rate limit: …" that wraps ctx's error when ctx has ended
// (x/time/rate refuses a wait that would pass the deadline without
// wrapping it).
func Throttle(ctx context.Context, l flowcontrol.RateLimiter) error {
	if l == nil {
		return nil
	}
	err := l.Wait(ctx)
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%w)", err, cerr)
	}
	return fmt.Errorf("client-side rate limit: %w", err)
}
