// Package widget is the Widget operator, laid out as kubebuilder lays out
// a project: api/v1 holds the types with their +kubebuilder markers,
// internal/controller the reconcilers with their +kubebuilder:rbac
// markers, and config/ what controller-gen makes of them — the CRDs
// (config/crd/bases) and the ClusterRole the operator runs under
// (config/rbac/role.yaml), embedded by package config. The deep copies
// (api/v1/zz_generated.deepcopy.go) and config/ are generated and
// committed; run go generate here after changing a marker or a type
// (TestGeneratedFilesAreCurrent fails until you do).
//
// A Widget owns one instance in the local cloud (examples/cloud); a
// WidgetSet owns Widgets. examples/demo runs them.
package widget

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object rbac:roleName=manager-role crd paths=./... output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
