package handler

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/reconcile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is an Enqueuer that records its calls, prefixed with its name.
type recorder struct {
	name  string
	calls *[]string
}

func newRecorder(name string) (recorder, *[]string) {
	var calls []string
	return recorder{name: name, calls: &calls}, &calls
}

func (r recorder) Add(req reconcile.Request) { *r.calls = append(*r.calls, r.name+" "+req.String()) }
func (r recorder) AddAfter(req reconcile.Request, d time.Duration) {
	*r.calls = append(*r.calls, fmt.Sprintf("%s %s after %s", r.name, req, d))
}

func pod(ns, name string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs, ResourceVersion: "1"}}
}

func ref(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(name)}
	if controller {
		r.Controller = &controller
	}
	return r
}

func TestEnqueueRequestForObject(t *testing.T) {
	var nilPod *corev1.Pod
	a, b := pod("ns", "a"), pod("ns", "b")
	tests := []struct {
		name string
		ev   Event
		want []string
	}{
		{"create", CreateEvent{Object: a}, []string{"q ns/a"}},
		{"create nil", CreateEvent{}, nil},
		{"create typed nil", CreateEvent{Object: nilPod}, nil},
		{"update new", UpdateEvent{ObjectOld: a, ObjectNew: b}, []string{"q ns/b"}},
		{"update old only", UpdateEvent{ObjectOld: a}, []string{"q ns/a"}},
		{"update typed nil new", UpdateEvent{ObjectOld: a, ObjectNew: nilPod}, []string{"q ns/a"}},
		{"update nothing", UpdateEvent{}, nil},
		{"delete", DeleteEvent{Object: a}, []string{"q ns/a"}},
		{"delete final state unknown", DeleteEvent{Object: a, FinalStateUnknown: true}, []string{"q ns/a"}},
		{"delete nil", DeleteEvent{}, nil},
		{"generic", GenericEvent{Object: a}, []string{"q ns/a"}},
		{"generic nil", GenericEvent{Object: nilPod}, nil},
		{"cluster-scoped", CreateEvent{Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}, []string{"q /n1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, calls := newRecorder("q")
			Dispatch(context.Background(), EnqueueRequestForObject{}, tt.ev, q, nil)
			if !slices.Equal(*calls, tt.want) {
				t.Fatalf("calls %q, want %q", *calls, tt.want)
			}
		})
	}
}

func TestDispatchPriority(t *testing.T) {
	a := pod("ns", "a")
	a2 := a.DeepCopy()
	a2.ResourceVersion = "2"
	noRV := pod("ns", "a")
	noRV.ResourceVersion = ""
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"live create", CreateEvent{Object: a}, "q ns/a"},
		{"initial list", CreateEvent{Object: a, IsInInitialList: true}, "low ns/a"},
		{"update", UpdateEvent{ObjectOld: a, ObjectNew: a2}, "q ns/a"},
		{"resync", UpdateEvent{ObjectOld: a, ObjectNew: a.DeepCopy()}, "low ns/a"},
		{"no resourceVersion is not a resync", UpdateEvent{ObjectOld: noRV, ObjectNew: noRV}, "q ns/a"},
		{"update old only", UpdateEvent{ObjectOld: a}, "q ns/a"},
		{"delete", DeleteEvent{Object: a}, "q ns/a"},
		{"generic", GenericEvent{Object: a}, "q ns/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			q, low := recorder{"q", &calls}, recorder{"low", &calls}
			Dispatch(context.Background(), EnqueueRequestForObject{}, tt.ev, q, low)
			if len(calls) != 1 || calls[0] != tt.want {
				t.Fatalf("calls %q, want %q", calls, tt.want)
			}
		})
	}
	// Nil handler, nil event: nothing happens, nothing panics.
	q, calls := newRecorder("q")
	Dispatch(context.Background(), nil, CreateEvent{Object: a}, q, nil)
	Dispatch(context.Background(), EnqueueRequestForObject{}, nil, q, nil)
	if len(*calls) != 0 {
		t.Fatalf("calls %q", *calls)
	}
}

func TestEnqueueRequestForOwner(t *testing.T) {
	widgets := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	deployments := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	nodes := schema.GroupKind{Kind: "Node"}
	tests := []struct {
		name  string
		owner schema.GroupKind
		opts  OwnerOptions
		ev    Event
		want  []string
	}{
		{"controller owner", widgets, OwnerOptions{},
			CreateEvent{Object: pod("ns", "p", ref("example.com/v1", "Widget", "w", true))}, []string{"q ns/w"}},
		{"non-controller owner ignored by default", widgets, OwnerOptions{},
			CreateEvent{Object: pod("ns", "p", ref("example.com/v1", "Widget", "w", false))}, nil},
		{"non-controller owner with AnyOwner", widgets, OwnerOptions{AnyOwner: true},
			CreateEvent{Object: pod("ns", "p", ref("example.com/v1", "Widget", "w", false))}, []string{"q ns/w"}},
		{"AnyOwner enqueues every owner of the kind, once", widgets, OwnerOptions{AnyOwner: true},
			CreateEvent{Object: pod("ns", "p",
				ref("example.com/v1", "Widget", "w1", false),
				ref("apps/v1", "Deployment", "d", true),
				ref("example.com/v1beta1", "Widget", "w2", true),
				ref("example.com/v2", "Widget", "w1", false))}, []string{"q ns/w1", "q ns/w2"}},
		{"controller owner of another kind", widgets, OwnerOptions{},
			CreateEvent{Object: pod("ns", "p", ref("apps/v1", "Deployment", "d", true), ref("example.com/v1", "Widget", "w", false))}, nil},
		{"any version of the group matches", widgets, OwnerOptions{},
			CreateEvent{Object: pod("ns", "p", ref("example.com/v1alpha3", "Widget", "w", true))}, []string{"q ns/w"}},
		{"another group does not match", widgets, OwnerOptions{},
			CreateEvent{Object: pod("ns", "p", ref("other.io/v1", "Widget", "w", true))}, nil},
		{"core group", schema.GroupKind{Kind: "ConfigMap"}, OwnerOptions{},
			CreateEvent{Object: pod("ns", "p", ref("v1", "ConfigMap", "c", true))}, []string{"q ns/c"}},
		{"apps deployment", deployments, OwnerOptions{},
			DeleteEvent{Object: pod("ns", "p", ref("apps/v1", "Deployment", "d", true)), FinalStateUnknown: true}, []string{"q ns/d"}},
		{"cluster-scoped owner", nodes, OwnerOptions{ClusterScoped: true},
			GenericEvent{Object: pod("ns", "p", ref("v1", "Node", "n1", true))}, []string{"q /n1"}},
		{"invalid apiVersion skipped, next owner used", widgets, OwnerOptions{AnyOwner: true},
			CreateEvent{Object: pod("ns", "p", ref("a/b/c", "Widget", "bad", false), ref("example.com/v1", "Widget", "w", false))}, []string{"q ns/w"}},
		{"no owners", widgets, OwnerOptions{}, CreateEvent{Object: pod("ns", "p")}, nil},
		{"nil object", widgets, OwnerOptions{}, CreateEvent{}, nil},
		{"update with a changed owner wakes both", widgets, OwnerOptions{},
			UpdateEvent{
				ObjectOld: pod("ns", "p", ref("example.com/v1", "Widget", "old", true)),
				ObjectNew: pod("ns", "p", ref("example.com/v1", "Widget", "new", true)),
			}, []string{"q ns/new", "q ns/old"}},
		{"update with the same owner wakes it once", widgets, OwnerOptions{},
			UpdateEvent{
				ObjectOld: pod("ns", "p", ref("example.com/v1", "Widget", "w", true)),
				ObjectNew: pod("ns", "p", ref("example.com/v1", "Widget", "w", true)),
			}, []string{"q ns/w"}},
		{"unstructured child", widgets, OwnerOptions{},
			CreateEvent{Object: func() Object {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("v1")
				u.SetKind("Secret")
				u.SetNamespace("ns")
				u.SetName("s")
				u.SetOwnerReferences([]metav1.OwnerReference{ref("example.com/v1", "Widget", "w", true)})
				return u
			}()}, []string{"q ns/w"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			tt.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			h, err := EnqueueRequestForOwner(tt.owner, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			q, calls := newRecorder("q")
			Dispatch(context.Background(), h, tt.ev, q, nil)
			if !slices.Equal(*calls, tt.want) {
				t.Fatalf("calls %q, want %q", *calls, tt.want)
			}
			if strings.Contains(tt.name, "invalid apiVersion") != strings.Contains(logs.String(), "invalid apiVersion") {
				t.Fatalf("log %q", logs.String())
			}
		})
	}
	if _, err := EnqueueRequestForOwner(schema.GroupKind{Group: "apps"}, OwnerOptions{}); err == nil {
		t.Fatal("owner without a kind accepted")
	}
	h, _ := EnqueueRequestForOwner(widgets, OwnerOptions{})
	if s := fmt.Sprint(h); s != "EnqueueRequestForOwner(Widget.example.com, controller owner)" {
		t.Fatalf("String = %q", s)
	}
	// An appsv1 ReplicaSet owned by its Deployment, the seeds' example.
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-5d4f",
		OwnerReferences: []metav1.OwnerReference{ref("apps/v1", "Deployment", "web", true)}}}
	hd, _ := EnqueueRequestForOwner(deployments, OwnerOptions{})
	q, calls := newRecorder("q")
	hd.Update(context.Background(), UpdateEvent{ObjectOld: rs, ObjectNew: rs}, q)
	if !slices.Equal(*calls, []string{"q default/web"}) {
		t.Fatalf("calls %q", *calls)
	}
}

func TestEnqueueRequestsFromMapFunc(t *testing.T) {
	// Widgets read the ConfigMap named in their label "config".
	widgetsOf := map[string][]string{"shared": {"w1", "w2", "w3"}, "solo": {"w4"}, "dup": {"w1", "w1", "w2"}}
	var mapped []string
	fn := func(_ context.Context, o Object) []reconcile.Request {
		mapped = append(mapped, o.GetName())
		var out []reconcile.Request
		for _, w := range widgetsOf[o.GetName()] {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: w}})
		}
		return out
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	var nilCM *corev1.ConfigMap
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("m%02d", i%20) // 20 distinct, each twice: the map path
	}
	widgetsOf["many"] = many
	var wantMany []string
	for i := range 20 {
		wantMany = append(wantMany, fmt.Sprintf("q ns/m%02d", i))
	}
	tests := []struct {
		name       string
		ev         Event
		want       []string
		wantMapped []string
	}{
		{"fan out", CreateEvent{Object: cm("shared")}, []string{"q ns/w1", "q ns/w2", "q ns/w3"}, []string{"shared"}},
		{"duplicates once", GenericEvent{Object: cm("dup")}, []string{"q ns/w1", "q ns/w2"}, []string{"dup"}},
		{"many duplicates once", GenericEvent{Object: cm("many")}, wantMany, []string{"many"}},
		{"update maps old and new, once each", UpdateEvent{ObjectOld: cm("shared"), ObjectNew: cm("dup")},
			[]string{"q ns/w1", "q ns/w2", "q ns/w3"}, []string{"dup", "shared"}},
		{"update with nil old", UpdateEvent{ObjectNew: cm("solo")}, []string{"q ns/w4"}, []string{"solo"}},
		{"delete", DeleteEvent{Object: cm("solo")}, []string{"q ns/w4"}, []string{"solo"}},
		{"unknown maps to nothing", CreateEvent{Object: cm("none")}, nil, []string{"none"}},
		{"nil object never reaches fn", CreateEvent{Object: nilCM}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mapped = nil
			q, calls := newRecorder("q")
			Dispatch(context.Background(), EnqueueRequestsFromMapFunc(fn), tt.ev, q, nil)
			if !slices.Equal(*calls, tt.want) {
				t.Fatalf("calls %q, want %q", *calls, tt.want)
			}
			if !slices.Equal(mapped, tt.wantMapped) {
				t.Fatalf("mapped %q, want %q", mapped, tt.wantMapped)
			}
		})
	}
	// The map func's own slice is never written to.
	shared := make([]reconcile.Request, 1, 4) // spare capacity an append could write into
	shared[0].Name = "x"
	own := EnqueueRequestsFromMapFunc(func(context.Context, Object) []reconcile.Request { return shared })
	q, _ := newRecorder("q")
	own.Update(context.Background(), UpdateEvent{ObjectOld: cm("a"), ObjectNew: cm("b")}, q)
	if spare := shared[:2]; spare[0].Name != "x" || spare[1].Name != "" {
		t.Fatalf("map func slice modified: %v", spare)
	}
	// A nil map func maps to nothing.
	q, calls := newRecorder("q")
	EnqueueRequestsFromMapFunc(nil).Create(context.Background(), CreateEvent{Object: cm("shared")}, q)
	if len(*calls) != 0 {
		t.Fatalf("calls %q", *calls)
	}
	// Low priority follows the event through the map func.
	var both []string
	Dispatch(context.Background(), EnqueueRequestsFromMapFunc(fn), CreateEvent{Object: cm("solo"), IsInInitialList: true},
		recorder{"q", &both}, recorder{"low", &both})
	if !slices.Equal(both, []string{"low ns/w4"}) {
		t.Fatalf("calls %q", both)
	}
}

func TestFuncs(t *testing.T) {
	var got []string
	h := Funcs{
		CreateFunc: func(_ context.Context, e CreateEvent, q Enqueuer) {
			got = append(got, "create")
			q.AddAfter(requestFor(e.Object), time.Second)
		},
		DeleteFunc: func(context.Context, DeleteEvent, Enqueuer) { got = append(got, "delete") },
	}
	q, calls := newRecorder("q")
	a := pod("ns", "a")
	for _, ev := range []Event{CreateEvent{Object: a}, UpdateEvent{ObjectOld: a, ObjectNew: a}, DeleteEvent{Object: a}, GenericEvent{Object: a}} {
		Dispatch(context.Background(), h, ev, q, nil)
	}
	if !slices.Equal(got, []string{"create", "delete"}) || !slices.Equal(*calls, []string{"q ns/a after 1s"}) {
		t.Fatalf("got %q, calls %q", got, *calls)
	}
}

func TestIsNil(t *testing.T) {
	var p *corev1.Pod
	var u *unstructured.Unstructured
	for _, tt := range []struct {
		o    Object
		want bool
	}{{nil, true}, {p, true}, {u, true}, {pod("a", "b"), false}, {&unstructured.Unstructured{}, false}} {
		if got := IsNil(tt.o); got != tt.want {
			t.Errorf("IsNil(%T) = %v", tt.o, got)
		}
	}
}
