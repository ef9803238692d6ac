package cache

import (
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestMutationDetector(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(p *corev1.Pod)
		wantPath string // "" means: no mutation must be reported
	}{
		{name: "label changed", mutate: func(p *corev1.Pod) { p.Labels["app"] = "db" }, wantPath: ".ObjectMeta.Labels[app]"},
		{name: "label added", mutate: func(p *corev1.Pod) { p.Labels["new"] = "x" }, wantPath: ".ObjectMeta.Labels[new] (added)"},
		{name: "container image", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil" }, wantPath: ".Spec.Containers[0].Image"},
		{name: "slice appended", mutate: func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, "f") }, wantPath: ".ObjectMeta.Finalizers (length 1, stored 0)"},
		{name: "quantity value", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
		}, wantPath: ".Spec.Containers[0].Resources.Limits[cpu]"},
		{name: "status", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, wantPath: ".Status.Phase"},
		// Reading a Quantity caches its string form inside the object: not a
		// semantic change, so not reported.
		{name: "quantity read", mutate: func(p *corev1.Pod) {
			q := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
			_ = q.String()
		}},
		{name: "untouched", mutate: func(*corev1.Pod) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var reported []error
			ix, err := New(Options[*corev1.Pod]{
				DetectMutations: true,
				OnMutation: func(err error) {
					mu.Lock()
					defer mu.Unlock()
					reported = append(reported, err)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			p := pod("a", "x", "1", "app=web")
			p.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			}}}
			if err := ix.Add(p); err != nil {
				t.Fatal(err)
			}
			got, _ := ix.Get("a", "x")
			tt.mutate(got)

			err = ix.Check()
			if tt.wantPath == "" {
				if err != nil || len(reported) != 0 {
					t.Fatalf("Check = %v, reported %v; want no mutation", err, reported)
				}
				return
			}
			var me *MutationError
			if !errors.As(err, &me) || me.Key != "a/x" || me.Path != tt.wantPath {
				t.Fatalf("Check = %v, want a MutationError for a/x at %q", err, tt.wantPath)
			}
			if !strings.Contains(err.Error(), "DeepCopy") {
				t.Errorf("error does not tell the fix: %v", err)
			}
			if len(reported) != 1 {
				t.Errorf("OnMutation called %d times, want 1", len(reported))
			}
			// Reported once: a second Check finds nothing new.
			if err := ix.Check(); err != nil {
				t.Errorf("second Check = %v, want nil", err)
			}
		})
	}
}

// TestMutationDetectorOnReplaceAndDelete: a mutated object is caught when it
// leaves the cache, before Check runs, by Update, Delete and Replace.
func TestMutationDetectorOnReplaceAndDelete(t *testing.T) {
	for _, op := range []string{"update", "delete", "replace"} {
		t.Run(op, func(t *testing.T) {
			var reported []error
			ix, err := New(Options[*corev1.Pod]{DetectMutations: true, OnMutation: func(err error) { reported = append(reported, err) }})
			if err != nil {
				t.Fatal(err)
			}
			p := pod("a", "x", "1", "app=web")
			if err := ix.Add(p); err != nil {
				t.Fatal(err)
			}
			p.Labels["app"] = "mutated" // the caller still holds the stored pointer
			switch op {
			case "update":
				err = ix.Update(pod("a", "x", "2"))
			case "delete":
				err = ix.Delete(p)
			case "replace":
				err = ix.Replace(nil, "5")
			}
			if err != nil {
				t.Fatal(err)
			}
			var me *MutationError
			if len(reported) != 1 || !errors.As(reported[0], &me) || me.Path != ".ObjectMeta.Labels[app]" {
				t.Fatalf("reported %v, want one mutation at .ObjectMeta.Labels[app]", reported)
			}
			if err := ix.Check(); !errors.As(err, &me) {
				t.Fatalf("Check = %v, want the mutation found by %s", err, op)
			}
			if err := ix.Check(); err != nil {
				t.Fatalf("second Check = %v, want nil", err)
			}
		})
	}
}
