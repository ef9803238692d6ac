package builder_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// childApplier is an operator that applies its children with server-side
// apply: for each parent ConfigMap labelled role=parent, a child ConfigMap
// "<name>-child" controlled by it, holding the parent's data. It applies
// the whole desired state each time, forced: the fields it owns are what
// it says, whoever changed them.
type childApplier struct {
	c  *client.Client
	ns string
}

func (a *childApplier) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace != a.ns {
		return reconcile.Result{}, nil
	}
	var parent corev1.ConfigMap
	if err := a.c.Get(ctx, req.NamespacedName, &parent); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if parent.Labels["role"] != "parent" {
		return reconcile.Result{}, nil
	}
	child := corev1ac.ConfigMap(parent.Name+"-child", parent.Namespace).
		WithLabels(map[string]string{"role": "child"}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion("v1").WithKind("ConfigMap").WithName(parent.Name).WithUID(parent.UID).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithData(parent.Data)
	return reconcile.Result{}, a.c.Apply(ctx, child, client.ForceOwnership())
}

// An operator applying its children with typed apply configurations, on
// both servers: the child is created by apply, follows its parent, comes
// back to the operator's values after another writer changed them (the
// operator's forced apply; the other writer keeps the fields only it
// set), and its managedFields name the operator as the manager of its
// fields.
func TestOperatorAppliesChildren(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ns := env.Namespace
		mgr, err := manager.New(env.Config(), manager.Options{FieldOwner: "child-operator"})
		if err != nil {
			t.Fatal(err)
		}
		c := mgr.Client()
		if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Owns(&corev1.ConfigMap{}).Complete(&childApplier{c: c, ns: ns}); err != nil {
			t.Fatal(err)
		}
		start(t, mgr)
		ctx := context.Background()
		parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{"role": "parent"}},
			Data: map[string]string{"color": "blue"}}
		create(t, c, parent)
		key := types.NamespacedName{Namespace: ns, Name: "p-child"}
		childData := func() map[string]string {
			var child corev1.ConfigMap
			if err := c.Uncached().Get(ctx, key, &child); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				t.Fatal(err)
			}
			return child.Data
		}
		testutil.Eventually(t, "the child applied", func() bool { return childData()["color"] == "blue" })

		parent.Data["color"] = "red"
		if err := c.Update(ctx, parent); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the child following its parent", func() bool { return childData()["color"] == "red" })

		// Another writer changes the operator's field and adds one of its
		// own; the change wakes the operator (Owns), whose forced apply
		// sets its field back.
		intruder := client.RawPatch(types.MergePatchType, []byte(`{"data":{"color":"green","note":"mine"}}`))
		if err := c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-child"}}, intruder, client.FieldOwner("intruder")); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the operator's value back", func() bool {
			d := childData()
			return d["color"] == "red" && d["note"] == "mine"
		})
		var child corev1.ConfigMap
		if err := c.Uncached().Get(ctx, key, &child); err != nil {
			t.Fatal(err)
		}
		var managers []string
		for _, e := range child.ManagedFields {
			managers = append(managers, e.Manager+"/"+string(e.Operation))
		}
		if got := strings.Join(managers, ","); got != "child-operator/Apply,intruder/Update" {
			t.Fatalf("managers of the child: %s", got)
		}
		if len(child.OwnerReferences) != 1 || child.OwnerReferences[0].UID != parent.UID {
			t.Fatalf("owner references %+v", child.OwnerReferences)
		}
	})
}
