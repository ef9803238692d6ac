// Package v1 is the example.kloop.dev/v1 API of the Widget operator:
// Widget (an instance in the local cloud) and WidgetSet (Widgets made from
// a template). The +kubebuilder markers here are what controller-gen
// turns into zz_generated.deepcopy.go and config/crd/bases (go generate
// in examples/widget).
//
// +kubebuilder:object:generate=true
// +groupName=example.kloop.dev
package v1
