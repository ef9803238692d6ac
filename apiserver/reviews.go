package apiserver

import (
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// adminUser is the identity of the embedded server's bearer token, its only
// user: an administrator, in adminGroups (apiservertest's kube-apiserver
// gives its token the same identity).
const adminUser = "kloop-admin"

func adminGroups() []any { return []any{"system:masters", "system:authenticated"} }

// reviewKinds are the create-only kinds that store nothing and answer about
// the requester, which kubectl auth can-i and kubectl auth whoami use. The
// embedded server authorizes every authenticated request, so every access
// review is allowed.
func reviewKinds() []*kind {
	review := func(g, resource, k string, newTyped func() any, answer func(obj map[string]any, now time.Time) (map[string]any, error)) *kind {
		return &kind{
			gvr: schema.GroupVersionResource{Group: g, Version: "v1", Resource: resource}, kind: k, newTyped: newTyped,
			singular: strings.ToLower(k), listKind: k + "List", verbs: []string{"create"}, review: answer,
		}
	}
	return []*kind{
		review(authorizationv1.GroupName, "selfsubjectaccessreviews", "SelfSubjectAccessReview",
			func() any { return &authorizationv1.SelfSubjectAccessReview{} }, selfSubjectAccessReview),
		review(authorizationv1.GroupName, "selfsubjectrulesreviews", "SelfSubjectRulesReview",
			func() any { return &authorizationv1.SelfSubjectRulesReview{} }, selfSubjectRulesReview),
		review(authenticationv1.GroupName, "selfsubjectreviews", "SelfSubjectReview",
			func() any { return &authenticationv1.SelfSubjectReview{} }, selfSubjectReview),
	}
}

// reviewMetadata checks that a review's metadata is empty, as
// kube-apiserver requires of access reviews.
func reviewMetadata(obj map[string]any) field.ErrorList {
	md, _ := obj["metadata"].(map[string]any)
	if len(md) == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata"), md, "must be empty")}
}

func selfSubjectAccessReview(obj map[string]any, _ time.Time) (map[string]any, error) {
	errs := reviewMetadata(obj)
	res, nonRes := jsontree.Get(obj, "spec", "resourceAttributes"), jsontree.Get(obj, "spec", "nonResourceAttributes")
	if res != nil && nonRes != nil || res == nil && nonRes == nil {
		// kube-apiserver quotes its internal nonResourceAttributes.
		var v *nonResourceAttributes
		if m, ok := nonRes.(map[string]any); ok {
			v = &nonResourceAttributes{Path: jsontree.Str(m, "path"), Verb: jsontree.Str(m, "verb")}
		}
		errs = append(errs, field.Invalid(field.NewPath("spec"), v, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: authorizationv1.GroupName}, "", errs)
	}
	obj["status"] = map[string]any{"allowed": true}
	return obj, nil
}

// nonResourceAttributes is kube-apiserver's internal form of a review's
// nonResourceAttributes, as its validation errors print it.
type nonResourceAttributes struct {
	Path string
	Verb string
}

func selfSubjectRulesReview(obj map[string]any, _ time.Time) (map[string]any, error) {
	// As kube-apiserver, the answer carries no spec.
	return map[string]any{
		"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": map[string]any{}, "spec": map[string]any{},
		"status": map[string]any{
			"resourceRules":    []any{map[string]any{"verbs": []any{"*"}, "apiGroups": []any{"*"}, "resources": []any{"*"}}},
			"nonResourceRules": []any{map[string]any{"verbs": []any{"*"}, "nonResourceURLs": []any{"*"}}},
			"incomplete":       false,
		},
	}, nil
}

func selfSubjectReview(obj map[string]any, now time.Time) (map[string]any, error) {
	return map[string]any{
		"apiVersion": obj["apiVersion"], "kind": obj["kind"],
		"metadata": map[string]any{"creationTimestamp": now.UTC().Format(time.RFC3339)},
		"status":   map[string]any{"userInfo": map[string]any{"username": adminUser, "uid": adminUser, "groups": adminGroups()}},
	}, nil
}
