package reflector

// What the package's external tests use of its internals: the integration
// tests are in package reflector_test because they import apiservertest, whose
// server imports this package (its garbage collector runs on informers).

// MetricsRec is metricsRec, a Metrics that records what it observes.
type MetricsRec = metricsRec

// NewMetricsRec returns an empty MetricsRec.
func NewMetricsRec() *MetricsRec { return &metricsRec{} }

// WatchErrors returns the errors of the watches observed, in order.
func (m *metricsRec) WatchErrors() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]error(nil), m.watchErrors...)
}
