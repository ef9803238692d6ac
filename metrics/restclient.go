package metrics

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// RESTClient counts the requests a process sends to the API server, with
// the metric controller-runtime registers from client-go:
// rest_client_requests_total{code,method,host}. code is the HTTP status code,
// or "<error>" when no response came (as client-go). Wrap the transport of
// every HTTP client that talks to the API server with RoundTripper (the
// manager does, for its informers, client and leader election).
type RESTClient struct {
	requests *prometheus.Desc

	mu sync.Mutex // guards writes of counts (reads are lock-free)
	// counts holds one counter per (code, method, host) seen: a
	// map[requestLabels]*atomic.Uint64, copied on write, so that counting
	// a request is one atomic load, one map read and one atomic add.
	counts atomic.Pointer[map[requestLabels]*atomic.Uint64]
}

type requestLabels struct{ code, method, host string }

// NewRESTClient registers rest_client_requests_total on reg.
func NewRESTClient(reg prometheus.Registerer) (*RESTClient, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: NewRESTClient needs a prometheus.Registerer")
	}
	r := &RESTClient{
		requests: prometheus.NewDesc("rest_client_requests_total",
			"Number of HTTP requests, partitioned by status code, method, and host.", []string{"code", "method", "host"}, nil),
	}
	if err := reg.Register(r); err != nil {
		return nil, fmt.Errorf("metrics: registering REST client metrics: %w", err)
	}
	return r, nil
}

// RoundTripper returns next (http.DefaultTransport when nil) counting each
// request it sends, retries included, once its response headers (or an
// error) came back.
func (r *RESTClient) RoundTripper(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &countingTransport{r: r, next: next}
}

type countingTransport struct {
	r    *RESTClient
	next http.RoundTripper
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "<error>"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.r.count(requestLabels{code: code, method: req.Method, host: req.URL.Host})
	return resp, err
}

func (r *RESTClient) count(l requestLabels) {
	if m := r.counts.Load(); m != nil {
		if c := (*m)[l]; c != nil {
			c.Add(1)
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var cur map[requestLabels]*atomic.Uint64
	if m := r.counts.Load(); m != nil {
		cur = *m
	}
	if c := cur[l]; c != nil { // added meanwhile
		c.Add(1)
		return
	}
	next := make(map[requestLabels]*atomic.Uint64, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	c := new(atomic.Uint64)
	c.Add(1)
	next[l] = c
	r.counts.Store(&next)
}

// Describe implements prometheus.Collector.
func (r *RESTClient) Describe(ch chan<- *prometheus.Desc) { ch <- r.requests }

// Collect implements prometheus.Collector.
func (r *RESTClient) Collect(ch chan<- prometheus.Metric) {
	m := r.counts.Load()
	if m == nil {
		return
	}
	for l, c := range *m {
		ch <- prometheus.MustNewConstMetric(r.requests, prometheus.CounterValue, float64(c.Load()), l.code, l.method, l.host)
	}
}
