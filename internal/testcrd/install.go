package testcrd

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Resource is the Widgets' resource.
var Resource = GroupVersion.WithResource("widgets")

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Install creates the Widget CRD on the server of cfg unless it exists
// (a CRD is cluster-scoped: every test of a binary that runs on the shared
// real kube-apiserver sees the same one), then waits until it is usable: its
// Established condition is True, discovery lists the widgets resource, and a
// list of Widgets succeeds. It returns ctx's error, with the last thing it
// waited for, when ctx ends first; give it a deadline.
func Install(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("testcrd: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("testcrd: %w", err)
	}
	crd := CRD()
	if _, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testcrd: create %s: %w", crd.GetName(), err)
	}
	var last error
	for {
		if last = ready(ctx, dyn, disc, crd.GetName()); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testcrd: %s not usable: %w (last: %w)", crd.GetName(), context.Cause(ctx), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ready returns nil once the CRD is Established, discovered and served.
func ready(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface, name string) error {
	got, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !established(got) {
		return errors.New("not Established yet")
	}
	list, err := disc.ServerResourcesForGroupVersion(GroupVersion.String())
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	found := false
	for _, r := range list.APIResources {
		found = found || r.Name == Resource.Resource
	}
	if !found {
		return fmt.Errorf("discovery of %s lacks %s", GroupVersion, Resource.Resource)
	}
	if _, err := dyn.Resource(Resource).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
