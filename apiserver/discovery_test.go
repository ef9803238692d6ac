package apiserver_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
)

func TestDiscovery(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testDiscovery)
}

func testDiscovery(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	groups, resources, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	// The embedded server serves a subset of kube-apiserver's groups, in
	// kube-apiserver's order (by group priority).
	var names []string
	for _, g := range groups {
		if slices.Contains([]string{"", "apps", "events.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io"}, g.Name) {
			names = append(names, g.Name)
		}
	}
	if fmt.Sprint(names) != "[ apps events.k8s.io apiextensions.k8s.io coordination.k8s.io]" {
		t.Fatalf("groups %v", names)
	}
	found := map[string]bool{}
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			found[rl.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, want := range []string{"v1/pods", "v1/pods/status", "apps/v1/deployments/scale", "coordination.k8s.io/v1/leases", "apiextensions.k8s.io/v1/customresourcedefinitions"} {
		if !found[want] {
			t.Errorf("discovery misses %s", want)
		}
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.Major != "1" {
		t.Fatalf("version: %v %+v", err, v)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/healthz").DoRaw(context.Background())
	if err != nil || string(raw) != "ok" {
		t.Fatalf("healthz: %v %s", err, raw)
	}
}
