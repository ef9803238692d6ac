package metrics

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Client exposes a client's read-your-own-writes statistics to Prometheus:
// kloop_client_read_waits_total and kloop_client_read_wait_seconds_total
// (cached reads that waited for the cache to catch up with the client's
// own writes, and how long in all), kloop_client_stale_reads_total (reads
// that gave up waiting after client.Options.ReadYourOwnWritesTimeout). Set
// it as client.Options.Metrics (it implements client.MetricsProvider); the
// clients that share one Client are counted together.
type Client struct {
	waits, waitTime, stale prometheus.Counter
}

// NewClient registers the client metrics on reg.
func NewClient(reg prometheus.Registerer) (*Client, error) {
	if reg == nil {
		return nil, errors.New("metrics: NewClient needs a prometheus.Registerer")
	}
	c := &Client{
		waits: prometheus.NewCounter(prometheus.CounterOpts{Name: "kloop_client_read_waits_total",
			Help: "Cached reads that waited for the cache to catch up with the client's own writes"}),
		waitTime: prometheus.NewCounter(prometheus.CounterOpts{Name: "kloop_client_read_wait_seconds_total",
			Help: "Total time cached reads waited for the cache to catch up with the client's own writes"}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{Name: "kloop_client_stale_reads_total",
			Help: "Cached reads that went on after the read-your-own-writes timeout with a cache still behind the client's writes"}),
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("metrics: registering client metrics: %w", err)
	}
	return c, nil
}

// Describe implements prometheus.Collector.
func (c *Client) Describe(ch chan<- *prometheus.Desc) {
	c.waits.Describe(ch)
	c.waitTime.Describe(ch)
	c.stale.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Client) Collect(ch chan<- prometheus.Metric) {
	c.waits.Collect(ch)
	c.waitTime.Collect(ch)
	c.stale.Collect(ch)
}

// ReadWaited implements client.MetricsProvider: it counts a cached read that
// waited d for the cache, and a stale read when it gave up.
func (c *Client) ReadWaited(d time.Duration, stale bool) {
	c.waits.Inc()
	c.waitTime.Add(d.Seconds())
	if stale {
		c.stale.Inc()
	}
}
