package restlimit

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// DefaultBurst is client-go's rest.DefaultBurst: the burst of a QPS given
// without one.
const DefaultBurst = 10

// For returns the rate limiter of cfg: cfg.RateLimiter if set, else a new
// token bucket of cfg.QPS (burst cfg.Burst, default DefaultBurst) when QPS
// > 0; nil when QPS is 0 or negative, which means no client-side limit here
// as with controller-runtime's config since v0.21 (API Priority and Fairness
// protects the server; client-go itself would use 5 qps). Callers that must
// share one bucket call For once and share what it returns.
func For(cfg *rest.Config) flowcontrol.RateLimiter {
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
