package manager_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// An operator whose RBAC grants it ConfigMaps in namespaces a and b only
// (Roles, no ClusterRole) runs with Cache.DefaultNamespaces a and b: its
// controller reconciles the ConfigMaps of a and b, never c's, and its
// cached reads of c fail with client.ErrOutOfScope instead of listing the
// whole cluster (which its RBAC forbids).
func TestDefaultNamespacesWithNamespacedRBAC(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testDefaultNamespacesWithNamespacedRBAC)
}

func testDefaultNamespacesWithNamespacedRBAC(t *testing.T, env *apiservertest.Env) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := client.New(env.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := env.Namespace
	suffix := a[max(0, len(a)-60):]
	b, c := "b-"+suffix, "c-"+suffix
	for _, ns := range []string{b, c} {
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := admin.Create(ctx, nsObj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), nsObj) })
	}
	const sa = "operator"
	opCfg := env.ServiceAccountConfig(a, sa)
	for _, ns := range []string{a, b} {
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "operator"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: a, Name: sa}},
		}
		for _, obj := range []client.Object{role, binding} {
			if err := admin.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ns := range []string{a, b, c} {
		if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}); err != nil {
			t.Fatal(err)
		}
	}
	// kube-apiserver's RBAC follows the bindings a moment later.
	direct, err := client.New(opCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the operator may list ConfigMaps in a and b", func() error {
		var l corev1.ConfigMapList
		return errors.Join(direct.List(ctx, &l, client.InNamespace(a)), direct.List(ctx, &l, client.InNamespace(b)))
	})
	var l corev1.ConfigMapList
	if err := direct.List(ctx, &l); !apierrors.IsForbidden(err) {
		t.Fatalf("the operator's List of all namespaces: %v, want Forbidden", err)
	}

	mgr, err := manager.New(opCfg, manager.Options{Cache: informer.FactoryOptions{DefaultNamespaces: []string{a, b}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards reconciled and outOfScope
	var reconciled []string
	var outOfScope error
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var cm corev1.ConfigMap
		if err := mgr.Client().Get(ctx, req.NamespacedName, &cm); err != nil {
			return reconcile.Result{}, err
		}
		other := mgr.Client().Get(ctx, client.ObjectKey{Namespace: c, Name: "cm"}, &cm)
		mu.Lock()
		defer mu.Unlock()
		reconciled = append(reconciled, req.String())
		outOfScope = other
		return reconcile.Result{}, nil
	})
	if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := run(t, mctx, mgr)
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	want := []string{a + "/cm", b + "/cm"}
	slices.Sort(want)
	testutil.Eventually(t, "the ConfigMaps of a and b reconciled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		// The namespaces' kube-root-ca.crt are reconciled too (a and b
		// get theirs a moment after they are made).
		got := slices.DeleteFunc(slices.Clone(reconciled), func(k string) bool { return strings.HasSuffix(k, "/kube-root-ca.crt") })
		slices.Sort(got)
		return slices.Equal(slices.Compact(got), want)
	})
	// A change in b reaches the controller too; c's never do.
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "later"}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: "later"}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "b/later reconciled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(reconciled, b+"/later")
	})
	mu.Lock()
	for _, k := range reconciled {
		if strings.HasPrefix(k, c+"/") {
			t.Errorf("reconciled %s", k)
		}
	}
	if !errors.Is(outOfScope, client.ErrOutOfScope) {
		t.Errorf("cached Get in c: %v, want ErrOutOfScope", outOfScope)
	}
	mu.Unlock()
	if err := mgr.Client().List(ctx, &l); err != nil {
		t.Fatalf("cached List of all namespaces: %v", err)
	}
	var got []string
	for _, cm := range l.Items {
		if cm.Name != "kube-root-ca.crt" {
			got = append(got, cm.Namespace+"/"+cm.Name)
		}
	}
	want = append(want, b+"/later")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("cached List of all namespaces: %q, want %q", got, want)
	}
}
