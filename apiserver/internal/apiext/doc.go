// +k8s:deepcopy-gen=package

// Package apiext is kloop's own, HTTP-free implementation of what the embedded
// API server needs to serve CustomResourceDefinitions. It depends only on
// apimachinery, kube-openapi's strfmt and client-go's util/jsonpath; it never
// imports k8s.io/apiextensions-apiserver or k8s.io/apiserver.
//
// # Types
//
// CustomResourceDefinition and its parts are apiextensions.k8s.io/v1, with the
// same JSON field names and omitempty behaviour, so documents written by
// kubectl, kubebuilder or client-go round-trip unchanged (JSONSchemaProps
// keeps items-as-array, additionalProperties as bool or schema, raw JSON
// enum/default/example). AddToScheme registers them.
//
// # CRD admission
//
// SetDefaults then ValidateCRD (or ValidateCRDUpdate) reproduce
// kube-apiserver's defaulting and validation, including the structural-schema
// rules, with its field paths and messages. AcceptNames then claims the names
// against the other CRDs of the group and sets the NamesAccepted and
// Established conditions (kube-apiserver's naming and establishing
// controllers, in one synchronous step); SetCondition, FindCondition and
// IsEstablished handle conditions.
//
// # Custom objects
//
// NewStructural compiles one version's openAPIV3Schema. For a create or
// update the server should, like kube-apiserver:
//
//  1. Prune(obj): drop unknown fields (returned for `unknown field` warnings
//     or strict field validation);
//  2. Default(obj): drop non-nullable nulls, apply defaults;
//  3. Validate(obj): field.ErrorList for a 422 Invalid status (schema
//     value validations, list-type set/map uniqueness, TypeMeta/ObjectMeta
//     of embedded resources; the root metadata is the server's to check).
//
// Not implemented: x-kubernetes-validations (CEL) rules are accepted, stored
// and published in OpenAPI but not evaluated here (the server does);
// validation ratcheting. Conversion webhooks are validated here (and
// called by the server). Patterns use
// Go's RE2 syntax rather than ECMA-262: lookaround and backreferences are
// rejected when the CRD is created, and \d \w \s match ASCII only.
//
// # Tables
//
// NewColumns evaluates additionalPrinterColumns (or the default Age column)
// into Table cells the way kube-apiserver's CRD table convertor does.
package apiext
