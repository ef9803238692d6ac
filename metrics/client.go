package metrics

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/client"
)

// Client exposes a client's read-your-own-writes statistics to Prometheus:
// kloop_client_read_waits_total and kloop_client_read_wait_seconds_total
// (cached reads that waited for the cache to catch up with the client's
// own writes, and how long in all), kloop_client_stale_reads_total (reads
// that gave up waiting after client.Options.ReadYourOwnWritesTimeout). Set
// it as client.Options.Metrics; it serves one client.
type Client struct {
	waits, waitTime, stale *prometheus.Desc

	mu   sync.Mutex // guards read
	read func(*client.Stats)
}

var _ client.MetricsProvider = (*Client)(nil)

// NewClient registers the client metrics on reg.
func NewClient(reg prometheus.Registerer) (*Client, error) {
	if reg == nil {
		return nil, errors.New("metrics: NewClient needs a prometheus.Registerer")
	}
	c := &Client{
		waits: prometheus.NewDesc("kloop_client_read_waits_total",
			"Cached reads that waited for the cache to catch up with the client's own writes", nil, nil),
		waitTime: prometheus.NewDesc("kloop_client_read_wait_seconds_total",
			"Total time cached reads waited for the cache to catch up with the client's own writes", nil, nil),
		stale: prometheus.NewDesc("kloop_client_stale_reads_total",
			"Cached reads that went on after the read-your-own-writes timeout with a cache still behind the client's writes", nil, nil),
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("metrics: registering client metrics: %w", err)
	}
	return c, nil
}

// Register implements client.MetricsProvider: one client per Client.
func (c *Client) Register(read func(*client.Stats)) error {
	if read == nil {
		return errors.New("metrics: client registered without a reader")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read != nil {
		return errors.New("metrics: a client is already registered on this Client collector")
	}
	c.read = read
	return nil
}

// Describe implements prometheus.Collector.
func (c *Client) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.waits
	ch <- c.waitTime
	ch <- c.stale
}

// Collect implements prometheus.Collector.
func (c *Client) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	read := c.read
	c.mu.Unlock()
	var s client.Stats
	if read != nil {
		read(&s)
	}
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(s.ReadWaits))
	ch <- prometheus.MustNewConstMetric(c.waitTime, prometheus.CounterValue, s.ReadWaitTime.Seconds())
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.CounterValue, float64(s.StaleReads))
}
