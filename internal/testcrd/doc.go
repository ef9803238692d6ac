// Package testcrd is the custom resource kloop's tests share: a Widget type
// as kubebuilder would generate it (with a hand-written DeepCopyObject), its
// CustomResourceDefinition (group example.com, namespaced, status
// subresource) and its group version. It is for tests only.
package testcrd
