package handler

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FuzzGroupOf checks that groupOf, which EnqueueRequestForOwner uses to avoid
// an allocation per owner reference, agrees with schema.ParseGroupVersion,
// which controller-runtime uses, on every input.
func FuzzGroupOf(f *testing.F) {
	for _, s := range []string{"", "/", "v1", "apps/v1", "example.com/v1alpha1", "a/b/c", "//", "apps/", "/v1", "a//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, apiVersion string) {
		group, ok := groupOf(apiVersion)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if ok != (err == nil) {
			t.Fatalf("groupOf(%q) ok=%v, ParseGroupVersion err=%v", apiVersion, ok, err)
		}
		if ok && group != gv.Group {
			t.Fatalf("groupOf(%q) = %q, ParseGroupVersion group %q", apiVersion, group, gv.Group)
		}
	})
}
