package controller_test

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/examples/cloud"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/config"
	"kloop.dev/kloop/internal/testutil"
)

// The operator runs under the ClusterRole its markers generate
// (config/rbac/role.yaml), bound to its ServiceAccount, and nothing more:
// Widgets and a WidgetSet converge and are deleted.
func TestOperatorUnderGeneratedRole(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		ctx := context.Background()
		h := newHarness(t, env, cloud.Options{})
		role, err := config.Role()
		if err != nil {
			t.Fatal(err)
		}
		if role.Name != "manager-role" {
			t.Errorf("role %q, want kubebuilder's manager-role", role.Name)
		}
		// Cluster-scoped names are shared on the real server: one per test.
		role.Name = "widget-operator-" + h.ns
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: h.ns, Name: "widget-operator"}},
		}
		for _, obj := range []client.Object{role, binding} {
			if err := h.c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.c.Delete(context.Background(), obj) })
		}
		cfg := env.ServiceAccountConfig(h.ns, "widget-operator")
		sa, err := client.New(cfg, client.Options{Scheme: h.scheme})
		if err != nil {
			t.Fatal(err)
		}
		// kube-apiserver applies a new binding a moment after its write.
		testutil.Eventually(t, "the binding in effect", func() error {
			return sa.List(ctx, &examplev1.WidgetList{}, client.InNamespace(h.ns))
		})
		// And the role grants nothing beyond what the markers say.
		if err := sa.List(ctx, &rbacv1.ClusterRoleList{}); err == nil {
			t.Error("the operator's ServiceAccount may list ClusterRoles")
		}

		h.startManager(managerOptions{cfg: cfg, set: true})
		w := h.createWidget("solo", spec)
		h.waitWidget("solo", "Running", isRunning)
		if err := h.c.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "solo gone", func() bool {
			_, err := h.getWidget("solo")
			return err != nil
		})
		h.createSet("set", 2, spec)
		for i := range 2 {
			h.waitWidget(fmt.Sprintf("set-%d", i), "Running", isRunning)
		}
		h.waitSet("set", 2, 2)
		if logs := h.logs.String(); containsForbidden(logs) {
			t.Errorf("the operator was refused something:\n%s", logs)
		}
	})
}
