package apiservertest

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

	"kloop.dev/kloop/apiserver"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates the CRDs of paths (apiserver.ReadCRDs) on the server
// of cfg, as the embedded server does with Options.CRDPaths (see install).
func installCRDs(ctx context.Context, cfg *rest.Config, paths []string) error {
	crds, err := apiserver.ReadCRDs(paths...)
	if err != nil {
		return err
	}
	return install(ctx, cfg, crds)
}

// InstallCRDs creates crds on the server of cfg (the embedded one or a
// cluster) unless they exist, unknown fields refused, and returns once
// each is Established, listed by discovery in each served version and
// listable; it returns ctx's error, with the last thing it waited for, when
// ctx ends first. A CRD that exists is left as it is: a real server is
// shared by the tests of a binary.
func InstallCRDs(ctx context.Context, cfg *rest.Config, crds ...*unstructured.Unstructured) error {
	docs := make([]apiserver.CRDDocument, len(crds))
	for i, crd := range crds {
		docs[i] = apiserver.CRDDocument{Source: fmt.Sprintf("argument %d", i), CRD: crd}
	}
	return install(ctx, cfg, docs)
}

func install(ctx context.Context, cfg *rest.Config, crds []apiserver.CRDDocument) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	for _, d := range crds {
		crd, src := d.CRD, d.Source
		_, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("CRD %s (%s): %w", crd.GetName(), src, err)
		}
	}
	for _, d := range crds {
		crd := d.CRD
		var last error
		for {
			if last = crdReady(ctx, dyn, disc, crd); last == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not usable: %w (last: %w)", crd.GetName(), context.Cause(ctx), last)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// crdReady returns nil once crd is Established, and discovery lists and a
// list answers its resource in each served version.
func crdReady(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface, crd *unstructured.Unstructured) error {
	got, err := dyn.Resource(crdResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	established := false
	for _, c := range conds {
		m, ok := c.(map[string]any)
		established = established || ok && m["type"] == "Established" && m["status"] == "True"
	}
	if !established {
		return errors.New("not Established yet")
	}
	group, _, _ := unstructured.NestedString(got.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(got.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(got.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); !served {
			continue
		}
		name, _ := m["name"].(string)
		list, err := disc.ServerResourcesForGroupVersion(group + "/" + name)
		if err != nil {
			return fmt.Errorf("discovery of %s/%s: %w", group, name, err)
		}
		found := false
		for _, r := range list.APIResources {
			found = found || r.Name == plural
		}
		if !found {
			return fmt.Errorf("discovery of %s/%s lacks %s", group, name, plural)
		}
		if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: name, Resource: plural}).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return fmt.Errorf("list %s: %w", plural, err)
		}
	}
	return nil
}
