package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/leaderelection"
)

// LeaderElection exposes leader electors to Prometheus with client-go's and
// controller-runtime's metric names: leader_election_master_status{name}
// (1 while leading) and leader_election_slowpath_total{name}. Set it as
// leaderelection.Options.Metrics. Electors are read when Prometheus scrapes.
type LeaderElection struct {
	status, slowpath *prometheus.Desc

	electors readers[leaderelection.Status]
}

var _ leaderelection.MetricsProvider = (*LeaderElection)(nil)

// NewLeaderElection registers the leader election metrics on reg.
func NewLeaderElection(reg prometheus.Registerer) (*LeaderElection, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: NewLeaderElection needs a prometheus.Registerer")
	}
	l := &LeaderElection{
		status: prometheus.NewDesc("leader_election_master_status",
			"Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
			[]string{"name"}, nil),
		slowpath: prometheus.NewDesc("leader_election_slowpath_total",
			"Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
			[]string{"name"}, nil),
	}
	if err := reg.Register(l); err != nil {
		return nil, fmt.Errorf("metrics: registering leader election metrics: %w", err)
	}
	return l, nil
}

// Register implements leaderelection.MetricsProvider.
// A second elector of the same election (Lease name) is refused.
func (l *LeaderElection) Register(name string, read func(*leaderelection.Status)) error {
	return l.electors.add("leader election", name, read)
}

// Describe implements prometheus.Collector.
func (l *LeaderElection) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.status
	ch <- l.slowpath
}

// Collect implements prometheus.Collector.
func (l *LeaderElection) Collect(ch chan<- prometheus.Metric) {
	l.electors.each(func(name string, s *leaderelection.Status) {
		leading := 0.0
		if s.Leading {
			leading = 1
		}
		ch <- prometheus.MustNewConstMetric(l.status, prometheus.GaugeValue, leading, name)
		ch <- prometheus.MustNewConstMetric(l.slowpath, prometheus.CounterValue, float64(s.SlowPaths), name)
	})
}
