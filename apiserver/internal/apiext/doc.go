// Package apiext is kloop's own, HTTP-free implementation of what the embedded
// API server needs to serve CustomResourceDefinitions: the
// apiextensions.k8s.io/v1 types (JSON-compatible with Kubernetes: the same
// field names and omitempty behaviour, so kubectl and client-go documents
// round-trip), CRD defaulting and validation with kube-apiserver's rules and
// messages, a compiled structural schema that validates, defaults and prunes
// custom objects, and printer-column evaluation for Table output.
//
// It depends only on apimachinery and client-go's util/jsonpath; it never
// imports k8s.io/apiextensions-apiserver or k8s.io/apiserver.
//
// +k8s:deepcopy-gen=package
package apiext
