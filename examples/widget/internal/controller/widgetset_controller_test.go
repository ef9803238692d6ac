package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/examples/cloud"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/internal/controller"
	"kloop.dev/kloop/internal/testutil"
)

func containsForbidden(logs string) bool { return strings.Contains(logs, "forbidden") }

func (h *harness) createSet(name string, replicas int32, spec examplev1.WidgetSpec) *examplev1.WidgetSet {
	h.t.Helper()
	s := &examplev1.WidgetSet{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Spec: examplev1.WidgetSetSpec{
		Replicas: &replicas,
		Template: examplev1.WidgetTemplate{Metadata: examplev1.WidgetTemplateMeta{Labels: map[string]string{"app": name}}, Spec: spec},
	}}
	if err := h.c.Create(context.Background(), s); err != nil {
		h.t.Fatal(err)
	}
	return s
}

// waitSet waits until the set's status counts replicas Widgets, ready of
// them Running, and returns it.
func (h *harness) waitSet(name string, replicas, ready int32) *examplev1.WidgetSet {
	h.t.Helper()
	var s examplev1.WidgetSet
	testutil.Eventually(h.t, fmt.Sprintf("%s at %d replicas, %d ready", name, replicas, ready), func() error {
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &s); err != nil {
			return err
		}
		if s.Status.Replicas != replicas || s.Status.ReadyReplicas != ready || s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("status %+v at generation %d", s.Status, s.Generation)
		}
		return nil
	})
	return &s
}

// setWidgets returns the names of the Widgets the set controls.
func (h *harness) setWidgets(set *examplev1.WidgetSet) []string {
	h.t.Helper()
	var l examplev1.WidgetList
	if err := h.c.List(context.Background(), &l, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var names []string
	for _, w := range l.Items {
		if ref := metav1.GetControllerOf(&w); ref != nil && ref.UID == set.UID && w.DeletionTimestamp.IsZero() {
			names = append(names, w.Name)
		}
	}
	return names
}

func (h *harness) scale(name string, replicas int32, mutate func(*examplev1.WidgetSet)) {
	h.t.Helper()
	var s examplev1.WidgetSet
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &s); err != nil {
		h.t.Fatal(err)
	}
	s.Spec.Replicas = &replicas
	if mutate != nil {
		mutate(&s)
	}
	if err := h.c.Update(context.Background(), &s); err != nil {
		h.t.Fatal(err)
	}
}

// A WidgetSet makes <set>-0 … <set>-N-1 from its template, controlled by
// it; it scales up and down (a scaled-down Widget's instance goes with
// it), and a template change reaches its Widgets.
func TestWidgetSetScale(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{ProvisionDelay: 50 * time.Millisecond})
		h.startManager(managerOptions{set: true})
		set := h.createSet("web", 3, spec)
		set = h.waitSet("web", 3, 3)
		for _, tc := range []struct {
			replicas int32
			want     []string
		}{
			{3, []string{"web-0", "web-1", "web-2"}},
			{5, []string{"web-0", "web-1", "web-2", "web-3", "web-4"}},
			{1, []string{"web-0"}},
		} {
			if tc.replicas != 3 {
				h.scale("web", tc.replicas, nil)
			}
			set = h.waitSet("web", tc.replicas, tc.replicas)
			testutil.Eventually(t, fmt.Sprintf("Widgets %v", tc.want), func() error {
				if got := h.setWidgets(set); strings.Join(got, ",") != strings.Join(tc.want, ",") {
					return fmt.Errorf("widgets %v", got)
				}
				return nil
			})
			testutil.Eventually(t, fmt.Sprintf("%d live instances", tc.replicas), func() error {
				if s := h.cloud.Stats(); s.Live != int64(tc.replicas) {
					return fmt.Errorf("%d live", s.Live)
				}
				return nil
			})
		}
		w, err := h.getWidget("web-0")
		if err != nil {
			t.Fatal(err)
		}
		if w.Labels["app"] != "web" || w.Labels[controller.SetLabel] != "web" {
			t.Errorf("labels %v", w.Labels)
		}
		ref := metav1.GetControllerOf(w)
		if ref == nil || ref.Kind != "WidgetSet" || ref.Name != "web" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("controller reference %+v", ref)
		}

		// A template change reaches the Widget, and its instance.
		h.scale("web", 1, func(s *examplev1.WidgetSet) { s.Spec.Template.Spec.Size = "medium" })
		h.waitWidget("web-0", "medium and Running", func(w *examplev1.Widget) error {
			if w.Spec.Size != "medium" {
				return fmt.Errorf("size %s", w.Spec.Size)
			}
			return isRunning(w)
		})
		if insts := h.liveInstances(w.UID); len(insts) != 1 || insts[0].Size != "medium" {
			t.Errorf("instances %+v", insts)
		}
	})
}

// Deleting a WidgetSet deletes its Widgets by garbage collection, each
// after its finalizer has deleted its instance.
func TestWidgetSetCascadeDelete(t *testing.T) {
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		h := newHarness(t, env, cloud.Options{})
		h.startManager(managerOptions{set: true})
		set := h.createSet("batch", 4, spec)
		h.waitSet("batch", 4, 4)
		if s := h.cloud.Stats(); s.Live != 4 {
			t.Fatalf("%d live instances, want 4", s.Live)
		}
		if err := h.c.Delete(context.Background(), set, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		// kube-controller-manager's garbage collector picks up a new
		// custom resource on its discovery resync (30 s): wait longer than
		// testutil.Eventually does.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var l examplev1.WidgetList
			if err := h.c.List(context.Background(), &l, client.InNamespace(h.ns)); err != nil {
				t.Fatal(err)
			}
			if len(l.Items) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d Widgets left 2 minutes after their set was deleted", len(l.Items))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if s := h.cloud.Stats(); s.Live != 0 || s.Created != 4 {
			t.Errorf("after the cascade: %d live instances, %d created", s.Live, s.Created)
		}
	})
}
