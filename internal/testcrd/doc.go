// Package testcrd is the custom resource kloop's tests share: a Widget type
// as kubebuilder would generate it (with a hand-written DeepCopyObject), its
// CustomResourceDefinition (group example.com, namespaced, status
// subresource) and its group version. It is for tests only.
//
// WidgetV1alpha1 is the Widget's older version (spec.colour), a spoke of
// Widget, the hub (kloop.dev/kloop/webhook/conversion); VersionedCRD is the
// CRD with both versions, converted by a webhook. It has the name of CRD's
// CRD: a test binary that runs on the real kube-apiserver uses one or the
// other.
//
// Install creates the CRD on a server unless it is there and waits until it
// is Established and served, so that tests sharing one real kube-apiserver
// (where a CRD is shared by every test of the binary) can each call it.
package testcrd
