package apiserver_test

import (
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// TestAccessReviews checks, through client-go's generated clients (which
// send protobuf), the reviews kubectl auth can-i and kubectl auth whoami
// create: the test's user may do anything, and is kloop-admin.
func TestAccessReviews(t *testing.T) {
	onTargets(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
		ctx := ctxT(t)
		az := cs.AuthorizationV1()
		for _, tc := range []struct {
			name string
			spec authorizationv1.SelfSubjectAccessReviewSpec
		}{
			{"resource", authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: env.Namespace, Verb: "delete", Group: "apps", Resource: "deployments", Name: "d"}}},
			{"any resource", authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}}},
			{"non-resource", authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}},
		} {
			got, err := az.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: tc.spec}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !got.Status.Allowed || got.Status.Denied {
				t.Errorf("%s: status %+v, want allowed", tc.name, got.Status)
			}
		}
		_, err := az.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("empty review: got %v, want Invalid", err)
		}

		rules, err := az.SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: env.Namespace}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		all := slices.ContainsFunc(rules.Status.ResourceRules, func(r authorizationv1.ResourceRule) bool {
			return slices.Equal(r.Verbs, []string{"*"}) && slices.Equal(r.APIGroups, []string{"*"}) && slices.Equal(r.Resources, []string{"*"})
		})
		if !all || rules.Status.Incomplete {
			t.Errorf("rules review: %+v, want a complete answer with every verb on every resource", rules.Status)
		}

		who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u := who.Status.UserInfo; u.Username != "kloop-admin" || !slices.Contains(u.Groups, "system:masters") {
			t.Errorf("whoami: %+v, want kloop-admin in system:masters", u)
		}
	})
}
