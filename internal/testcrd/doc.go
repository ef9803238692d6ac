// Package testcrd is the custom resource kloop's tests share: a Widget type
// as kubebuilder would generate it (with a hand-written DeepCopyObject), its
// CustomResourceDefinition (group example.com, namespaced, status
// subresource) and its group version. It is for tests only.
//
// Install creates the CRD on a server unless it is there and waits until it
// is Established and served, so that tests sharing one real kube-apiserver
// (where a CRD is shared by every test of the binary) can each call it.
package testcrd
