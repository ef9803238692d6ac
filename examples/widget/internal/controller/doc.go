// Package controller holds the Widget operator's reconcilers:
// WidgetReconciler keeps one cloud instance per Widget, WidgetSetReconciler
// keeps a WidgetSet's Widgets. Their +kubebuilder:rbac markers make
// config/rbac/role.yaml.
package controller
