package webhook

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MetricsProvider exposes the statistics of a Server's webhooks, for
// example to Prometheus with controller-runtime's metric names (the
// implementation is kloop.dev/kloop/metrics's Webhook; the manager sets
// it). Pull style, as workqueue.MetricsProvider: the server counts with
// atomics and the provider reads them when it wants them.
type MetricsProvider interface {
	// Register is called once per registered path with a reader of its
	// statistics; read may be called from any goroutine at any time. An
	// error fails the Server's Register.
	Register(path string, read func(*Stats)) error
}

// LatencyBounds returns the upper bounds (inclusive) of the latency
// histogram: controller-runtime's buckets of
// controller_runtime_webhook_latency_seconds, 10 ns to 1000 s by powers
// of ten.
func LatencyBounds() [len(latencyBounds)]time.Duration { return latencyBounds }

var latencyBounds = [...]time.Duration{
	10 * time.Nanosecond, 100 * time.Nanosecond, time.Microsecond, 10 * time.Microsecond,
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond,
	time.Second, 10 * time.Second, 100 * time.Second, 1000 * time.Second,
}

// Histogram counts request latencies.
type Histogram struct {
	// Buckets[i] counts the latencies d with LatencyBounds()[i-1] < d <=
	// LatencyBounds()[i]; the last one those above every bound.
	Buckets [len(latencyBounds) + 1]uint64
	// Count is the sum of Buckets; Sum the total latency.
	Count uint64
	Sum   time.Duration
}

// Stats is a snapshot of one webhook path's statistics, with
// controller-runtime's metric in brackets (labelled webhook=<path>).
type Stats struct {
	// Requests counts the answered requests by HTTP status code
	// (controller_runtime_webhook_requests_total{code}); 200 and 500 are
	// always there, as controller-runtime initialises them.
	Requests map[int]uint64
	// Latency is the time to answer each request
	// (controller_runtime_webhook_latency_seconds).
	Latency Histogram
	// InFlight is the number of requests being answered
	// (controller_runtime_webhook_requests_in_flight).
	InFlight int64
	// AdmissionPanics and ConversionPanics count the handler's panics
	// (controller_runtime_webhook_panics_total and
	// controller_runtime_conversion_webhook_panics_total, summed over the
	// paths), for an admission.Webhook and a conversion.Webhook.
	AdmissionPanics, ConversionPanics uint64
}

// paniccer is what admission.Webhook and conversion.Webhook have.
type paniccer interface{ Panics() uint64 }

// instrumented counts one path's requests around its handler.
type instrumented struct {
	next       http.Handler
	conversion bool // a conversion webhook: its panics are conversion panics

	inFlight atomic.Int64
	buckets  [len(latencyBounds) + 1]atomic.Uint64
	sum      atomic.Int64 // nanoseconds

	mu sync.Mutex // guards codes
	// codes counts the requests by status code; 200 and 500 from the start.
	codes map[int]*atomic.Uint64
}

func newInstrumented(next http.Handler, conversion bool) *instrumented {
	return &instrumented{next: next, conversion: conversion,
		codes: map[int]*atomic.Uint64{http.StatusOK: {}, http.StatusInternalServerError: {}}}
}

func (h *instrumented) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h.inFlight.Add(1)
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		h.inFlight.Add(-1)
		d := time.Since(start)
		i, _ := slices.BinarySearch(latencyBounds[:], d)
		h.buckets[i].Add(1)
		h.sum.Add(int64(d))
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		h.counter(code).Add(1)
	}()
	h.next.ServeHTTP(rec, r)
}

func (h *instrumented) counter(code int) *atomic.Uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.codes[code]
	if c == nil {
		c = &atomic.Uint64{}
		h.codes[code] = c
	}
	return c
}

func (h *instrumented) read(s *Stats) {
	h.mu.Lock()
	s.Requests = make(map[int]uint64, len(h.codes))
	for code, c := range h.codes {
		s.Requests[code] = c.Load()
	}
	h.mu.Unlock()
	s.Latency.Count = 0
	for i := range h.buckets {
		n := h.buckets[i].Load()
		s.Latency.Buckets[i] = n
		s.Latency.Count += n
	}
	s.Latency.Sum = time.Duration(h.sum.Load())
	s.InFlight = h.inFlight.Load()
	if p, ok := h.next.(paniccer); ok {
		if h.conversion {
			s.ConversionPanics = p.Panics()
		} else {
			s.AdmissionPanics = p.Panics()
		}
	}
}

// statusRecorder keeps the status code a handler writes.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
