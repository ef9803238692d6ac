package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// RegisterRuntime registers the Go runtime and process collectors on reg,
// as controller-runtime registers them on its registry: go_* (the classic
// go_goroutines, go_memstats_*, go_gc_duration_seconds… and every metric
// of runtime/metrics, collectors.MetricsAll) and process_*
// (process_cpu_seconds_total, process_resident_memory_bytes,
// process_open_fds…, where the platform reports them: Linux, Windows, and
// partly macOS).
//
// A collector reg already has (prometheus.DefaultRegisterer comes with
// both) is left as it is and not returned; the collectors returned are the
// ones registered here, for the caller to unregister.
func RegisterRuntime(reg prometheus.Registerer) ([]prometheus.Collector, error) {
	if reg == nil {
		return nil, errors.New("metrics: RegisterRuntime needs a prometheus.Registerer")
	}
	if reg == prometheus.DefaultRegisterer {
		// The default registry has its own Go and process collectors, whose
		// descriptors overlap with these.
		return nil, nil
	}
	var registered []prometheus.Collector
	for _, c := range []struct {
		name string
		c    prometheus.Collector
	}{
		{"Go runtime", collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll))},
		{"process", collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})},
	} {
		err := reg.Register(c.c)
		if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			continue
		}
		if err != nil {
			for _, r := range registered {
				reg.Unregister(r)
			}
			return nil, fmt.Errorf("metrics: registering the %s collector: %w", c.name, err)
		}
		registered = append(registered, c.c)
	}
	return registered, nil
}
