// Package operator is the Widget operator as a library, as kubebuilder's
// cmd/main.go wires it: AddToManager registers the Widget and WidgetSet
// controllers of internal/controller with a manager whose scheme holds
// api/v1. Programs outside examples/widget (the benchmarks' convergence
// race) run the operator through it.
package operator
