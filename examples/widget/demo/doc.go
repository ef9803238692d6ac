// Package demo is the Widget operator's live demo, which `go run
// ./examples/demo` runs: an API server (the embedded one, or a cluster's
// from a kubeconfig), the local cloud, and a manager with the Widget and
// WidgetSet controllers; then a WidgetSet and Widgets are created, some
// changed and deleted, while the terminal shows the pipeline's counters
// (watch events, queue depth, reconciles in flight and by result, cloud
// instances, throttles and failures) and every Widget's state, redrawn in
// place on a terminal and as plain lines otherwise. It ends with a summary
// a person can check — N widgets Running, N instances in the cloud, 0
// leaked, 0 duplicated — or an error naming what had not converged when
// Options.Timeout ran out.
package demo
