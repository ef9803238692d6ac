package informer

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The default transform interns an added object whole, an updated one
// (another resourceVersion of a cached object) in its metadata only unless
// InternUpdates is set, and a relisted unchanged one (same resourceVersion)
// whole against its cached version. A watch's MODIFIED event is an update
// whatever its resourceVersion (it is not compared).
func TestLeanUpdates(t *testing.T) {
	tests := []struct {
		name          string
		internUpdates bool
		sameVersion   bool // a relist of the unchanged object
		modified      bool // from a watch's MODIFIED event
		wantSpec      bool // spec strings take the cached version's copies
	}{
		{"update, default", false, false, false, false},
		{"update, InternUpdates", true, false, false, true},
		{"relist, default", false, true, false, true},
		{"relist, InternUpdates", true, true, false, true},
		{"MODIFIED, default", false, false, true, false},
		{"MODIFIED, InternUpdates", true, false, true, true},
		{"MODIFIED with the cached resourceVersion, default", false, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLean(false, false, tt.internUpdates, nil, nil)
			prev, _ := decodedPods(t)
			if _, err := l.transform(prev); err != nil {
				t.Fatal(err)
			}
			l.intern(prev, nil, false)
			next, _ := decodedPods(t)
			if !tt.sameVersion {
				next.ResourceVersion += "1"
			}
			next.Labels["tier"] = "front" // a changed label set becomes canonical too
			want := next.DeepCopy()
			want.ManagedFields = nil
			out, err := l.transform(next)
			if err != nil {
				t.Fatal(err)
			}
			l.intern(out, prev, tt.modified)
			got := out.(*corev1.Pod)
			if !reflect.DeepEqual(got, want) {
				t.Fatal("transform changed the object's content")
			}
			if got.ManagedFields != nil {
				t.Error("managedFields kept")
			}
			// Metadata is interned on every path.
			if !sameData(got.Namespace, prev.Namespace) {
				t.Error("namespace not interned")
			}
			if k := keyOf(got.Labels, "pod-template-hash"); k == "" || !sameData(k, keyOf(prev.Labels, "pod-template-hash")) {
				t.Error("label key not interned")
			}
			if !sameData(got.OwnerReferences[0].Kind, prev.OwnerReferences[0].Kind) {
				t.Error("owner reference kind not interned")
			}
			// The spec: whole walk or not.
			if got := sameData(got.Spec.Containers[0].Image, prev.Spec.Containers[0].Image); got != tt.wantSpec {
				t.Errorf("image shares the cached copy: %v, want %v", got, tt.wantSpec)
			}
			if got := sameData(got.Spec.NodeName, prev.Spec.NodeName); got != tt.wantSpec {
				t.Errorf("node name shares the cached copy: %v, want %v", got, tt.wantSpec)
			}
		})
	}
}

// Walking an update against its cached version shares every unchanged
// pointer, slice and map with it, and never loses a change — in strings,
// numbers, booleans, pointers to them, quantities or times.
func TestInternSharesUnchanged(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *corev1.Pod)
		// shared lists what must be the cached version's memory afterwards.
		containers, volumes, tolerations, conditions bool
	}{
		{"resourceVersion only", func(p *corev1.Pod) { p.ResourceVersion += "1" }, true, true, true, true},
		{"status condition time", func(p *corev1.Pod) {
			p.Status.Conditions[2].LastTransitionTime = metav1.NewTime(p.Status.Conditions[2].LastTransitionTime.Add(time.Second))
		}, true, true, true, false},
		{"container port number", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8081 }, false, true, true, true},
		{"probe period", func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe.PeriodSeconds = 11 }, false, true, true, true},
		{"read-only mount flag", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[1].ReadOnly = false }, false, true, true, true},
		{"memory limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("512Mi")
		}, false, true, true, true},
		{"toleration seconds", func(p *corev1.Pod) { *p.Spec.Tolerations[0].TolerationSeconds = 301 }, true, true, false, true},
		{"toleration seconds dropped", func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = nil }, true, true, false, true},
		{"volume default mode", func(p *corev1.Pod) { p.Spec.Volumes[0].ConfigMap.DefaultMode = ptr(int32(0o600)) }, true, false, true, true},
		{"env value", func(p *corev1.Pod) { p.Spec.Containers[0].Env[3].Value = "changed" }, false, true, true, true},
		{"long image ID", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].ImageID += "0" }, true, true, true, true},
		{"empty tolerations", func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{} }, true, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &interner{}
			prev, _ := decodedPods(t)
			in.internObject(prev, nil)
			prevSnap := prev.DeepCopy()
			next, _ := decodedPods(t)
			tt.change(next)
			want := next.DeepCopy()
			in.internObject(next, prev)
			if !reflect.DeepEqual(next, want) {
				t.Fatalf("the walk changed the object's content:\n got %+v\nwant %+v", next.Spec, want.Spec)
			}
			if (next.Spec.Tolerations == nil) != (want.Spec.Tolerations == nil) {
				t.Fatal("nil and empty lists confused")
			}
			if !reflect.DeepEqual(prev, prevSnap) {
				t.Fatal("the walk wrote the cached version")
			}
			for _, c := range []struct {
				what       string
				got, wantS bool
			}{
				{"containers", sameSlice(next.Spec.Containers, prev.Spec.Containers), tt.containers},
				{"volumes", sameSlice(next.Spec.Volumes, prev.Spec.Volumes), tt.volumes},
				{"tolerations", sameSlice(next.Spec.Tolerations, prev.Spec.Tolerations), tt.tolerations},
				{"conditions", sameSlice(next.Status.Conditions, prev.Status.Conditions), tt.conditions},
			} {
				if c.got != c.wantS {
					t.Errorf("%s shared with the cached version: %v, want %v", c.what, c.got, c.wantS)
				}
			}
			// Unchanged parts inside a changed list are still shared.
			if tt.name == "env value" && !sameSlice(next.Spec.Containers[0].VolumeMounts, prev.Spec.Containers[0].VolumeMounts) {
				t.Error("unchanged volume mounts of a changed container not shared")
			}
		})
	}
}

// sameSlice reports whether a and b are the same memory.
func sameSlice[E any](a, b []E) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) && (a == nil) == (b == nil)
}
