package informer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/reflector"
)

func sameData(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// decodedPods returns two realistic Pods decoded from JSON, as the
// reflector makes them: no string is shared between them.
func decodedPods(t *testing.T) (*corev1.Pod, *corev1.Pod) {
	t.Helper()
	var out [2]*corev1.Pod
	for i := range out {
		data, err := json.Marshal(realisticPod(i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &corev1.Pod{}
		if err := json.Unmarshal(data, out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out[0], out[1]
}

func TestInternTyped(t *testing.T) {
	a, b := decodedPods(t)
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	in := &interner{}
	in.internObject(a, nil)
	in.internObject(b, nil)
	if !reflect.DeepEqual(a, wantA) || !reflect.DeepEqual(b, wantB) {
		t.Fatal("interning changed the objects' content")
	}
	for name, pair := range map[string][2]string{
		"image":          {a.Spec.Containers[0].Image, b.Spec.Containers[0].Image},
		"env value":      {a.Spec.Containers[0].Env[3].Value, b.Spec.Containers[0].Env[3].Value},
		"condition type": {string(a.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type)},
		"label key":      {keyOf(a.Labels, "app"), keyOf(b.Labels, "app")},
		"owner kind":     {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		"host IP":        {a.Status.HostIP, b.Status.HostIP},
	} {
		if !sameData(pair[0], pair[1]) {
			t.Errorf("%s not shared", name)
		}
	}
	if env := a.Spec.Containers[0].Env; cap(env) != len(env) {
		t.Errorf("env slice keeps spare capacity: len %d cap %d", len(env), cap(env))
	}
}

// keyOf returns the key string stored in m equal to k.
func keyOf(m map[string]string, k string) string {
	for key := range m {
		if key == k {
			return key
		}
	}
	return ""
}

func TestInternUnstructured(t *testing.T) {
	var objs [2]*unstructured.Unstructured
	for i := range objs {
		data, err := json.Marshal(realisticPod(i))
		if err != nil {
			t.Fatal(err)
		}
		objs[i] = &unstructured.Unstructured{}
		if err := objs[i].UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
	}
	want := objs[0].DeepCopy()
	in := &interner{}
	for _, o := range objs {
		in.internObject(o, nil)
	}
	if !reflect.DeepEqual(objs[0].Object, want.Object) {
		t.Fatal("interning changed the object's content")
	}
	img := func(u *unstructured.Unstructured) string {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
		return cs[0].(map[string]any)["image"].(string)
	}
	if !sameData(img(objs[0]), img(objs[1])) {
		t.Error("image not shared")
	}
	specKey := func(u *unstructured.Unstructured) string {
		for k := range u.Object {
			if k == "spec" {
				return k
			}
		}
		return ""
	}
	if !sameData(specKey(objs[0]), specKey(objs[1])) {
		t.Error("map key not shared")
	}
}

// BenchmarkInternPod measures the default interning of one realistic Pod
// decoded from JSON (no string shared with the cache), first with no
// previous version (a list, an add), then against the previous version of
// the same Pod, as an update is interned.
func BenchmarkInternPod(b *testing.B) {
	data, err := json.Marshal(realisticPod(1))
	if err != nil {
		b.Fatal(err)
	}
	decode := func() *corev1.Pod {
		p := &corev1.Pod{}
		if err := json.Unmarshal(data, p); err != nil {
			b.Fatal(err)
		}
		p.ManagedFields = nil
		return p
	}
	const pool = 512
	for _, withPrev := range []bool{false, true} {
		b.Run(fmt.Sprintf("prev=%t", withPrev), func(b *testing.B) {
			in := &interner{}
			prev := decode()
			in.internObject(prev, nil)
			objs := make([]*corev1.Pod, pool)
			for i := range objs {
				objs[i] = decode()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i%pool == 0 && i > 0 {
					b.StopTimer()
					for j := range objs {
						objs[j] = decode()
					}
					b.StartTimer()
				}
				var p Object
				if withPrev {
					p = prev
				}
				in.internObject(objs[i%pool], p)
			}
		})
	}
}

// TestInternAgainstPrevious interns an update against the cached version
// it replaces: the content never changes, the previous version is never
// written, strings equal to the previous version's take its copies, and
// changed ones are canonical (shared with an unrelated object).
func TestInternAgainstPrevious(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *corev1.Pod)
	}{
		{"unchanged", func(*corev1.Pod) {}},
		{"label value changed", func(p *corev1.Pod) { p.Labels["app"] = "api" }},
		{"label added", func(p *corev1.Pod) { p.Labels["tier"] = "front" }},
		{"label removed", func(p *corev1.Pod) { delete(p.Labels, "app") }},
		{"labels dropped", func(p *corev1.Pod) { p.Labels = nil }},
		{"image changed", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example.com/shop/web:1.43.0" }},
		{"env shorter", func(p *corev1.Pod) { p.Spec.Containers[0].Env = p.Spec.Containers[0].Env[:3] }},
		{"container added", func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Name, c.Image = "sidecar", "registry.example.com/proxy:2"
			p.Spec.Containers = append(p.Spec.Containers, c)
		}},
		{"readiness probe dropped", func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe = nil }},
		{"owner and finalizer", func(p *corev1.Pod) {
			p.OwnerReferences[0].Name = "web-2-other"
			p.Finalizers = append(p.Finalizers, "example.com/cleanup")
		}},
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
				t.Fatal("interning changed the object's content")
			}
			if !reflect.DeepEqual(prev, prevSnap) {
				t.Fatal("interning wrote the previous version")
			}
			if next.Spec.NodeName != "" && !sameData(next.Spec.NodeName, prev.Spec.NodeName) {
				t.Error("unchanged node name does not take the previous version's copy")
			}
			if keyOf(next.Labels, "pod-template-hash") != "" && !sameData(keyOf(next.Labels, "pod-template-hash"), keyOf(prev.Labels, "pod-template-hash")) {
				t.Error("unchanged label key does not take the previous version's copy")
			}
			// Every interned string is the canonical one: an unrelated
			// object interned afterwards with nothing previous shares it.
			other := want.DeepCopy()
			data, err := json.Marshal(other)
			if err != nil {
				t.Fatal(err)
			}
			fresh := &corev1.Pod{}
			if err := json.Unmarshal(data, fresh); err != nil {
				t.Fatal(err)
			}
			in.internObject(fresh, nil)
			for i := range next.Spec.Containers {
				if !sameData(next.Spec.Containers[i].Image, fresh.Spec.Containers[i].Image) {
					t.Errorf("container %d image not canonical", i)
				}
			}
			for k := range next.Labels {
				if !sameData(keyOf(next.Labels, k), keyOf(fresh.Labels, k)) || !sameData(next.Labels[k], fresh.Labels[k]) {
					t.Errorf("label %q not canonical", k)
				}
			}
			if len(next.OwnerReferences) > 0 && !sameData(next.OwnerReferences[0].Name, fresh.OwnerReferences[0].Name) {
				t.Error("owner name not canonical")
			}
		})
	}
}

// TestInternSameObject: an object interned against itself (a source that
// re-sends the cached pointer) is left as it is.
func TestInternSameObject(t *testing.T) {
	in := &interner{}
	p, _ := decodedPods(t)
	in.internObject(p, nil)
	want := p.DeepCopy()
	in.internObject(p, p)
	if !reflect.DeepEqual(p, want) {
		t.Fatal("interning changed the object's content")
	}
}

type internName string

// internNode is a recursive type with the less common kinds the plan
// handles: arrays, interfaces, maps of named string types, nested
// ObjectMeta.
type internNode struct {
	Name     string
	Children []*internNode
	Any      any
	Named    map[internName]internName
	Pair     [2]string
	Meta     metav1.ObjectMeta
	private  string
}

func TestInternPlanKinds(t *testing.T) {
	mk := func() *internNode {
		b := func(s string) string { return string([]byte(s)) } // a fresh copy
		return &internNode{
			Name: b("root"),
			Children: []*internNode{
				{Name: b("child"), Any: &internNode{Name: b("in-any")}, Pair: [2]string{b("a"), b("b")}},
				nil,
			},
			Any:     b("plain string in an interface"),
			Named:   map[internName]internName{internName(b("k")): internName(b("v"))},
			Meta:    metav1.ObjectMeta{Namespace: b("ns"), Labels: map[string]string{b("l"): b("v")}},
			private: b("private"),
		}
	}
	in := &interner{}
	x, y := mk(), mk()
	want := mk()
	fn := in.compile(reflect.TypeFor[internNode]()).fn
	fn(unsafe.Pointer(x), nil)
	fn(unsafe.Pointer(y), unsafe.Pointer(x))
	for _, n := range []*internNode{x, y} {
		if !reflect.DeepEqual(n, want) {
			t.Fatalf("interning changed the content: %+v", n)
		}
	}
	for name, pair := range map[string][2]string{
		"name":        {x.Name, y.Name},
		"child name":  {x.Children[0].Name, y.Children[0].Name},
		"in any":      {x.Children[0].Any.(*internNode).Name, y.Children[0].Any.(*internNode).Name},
		"array":       {x.Children[0].Pair[1], y.Children[0].Pair[1]},
		"namespace":   {x.Meta.Namespace, y.Meta.Namespace},
		"named value": {string(x.Named["k"]), string(y.Named["k"])},
	} {
		if !sameData(pair[0], pair[1]) {
			t.Errorf("%s not shared", name)
		}
	}
	if sameData(x.private, y.private) {
		t.Error("unexported field interned")
	}
}

// TestInternAcrossCollections: canonical copies outlive garbage
// collections (Go's unique package drops a copy as soon as no Handle
// references it, which would stop sharing after every GC).
func TestInternAcrossCollections(t *testing.T) {
	in := &interner{}
	a, b := decodedPods(t)
	in.internObject(a, nil)
	runtime.GC()
	runtime.GC()
	in.internObject(b, nil)
	if !sameData(a.Spec.Containers[0].Image, b.Spec.Containers[0].Image) {
		t.Fatal("image not shared after a garbage collection")
	}
}

// TestInternTableGenerations: the table rotates, so strings that stop
// being interned are released, and it stays within a small multiple of the
// strings in use.
func TestInternTableGenerations(t *testing.T) {
	in := &interner{}
	in.mu.Lock()
	defer in.mu.Unlock()
	hot := in.intern(string([]byte("hot")))
	for i := range 10 * minGeneration {
		in.intern(fmt.Sprintf("churn-%d", i))
		if i%100 == 0 && !sameData(in.intern(string([]byte("hot"))), hot) {
			t.Fatalf("string in use lost its canonical copy after %d inserts", i)
		}
	}
	if n := len(in.cur) + len(in.prev); n > 2*minGeneration+1 {
		t.Fatalf("table holds %d strings, want at most %d", n, 2*minGeneration+1)
	}
	if _, ok := in.cur["churn-0"]; ok {
		t.Fatal("string unused for generations still in the table")
	}
	if _, ok := in.prev["churn-0"]; ok {
		t.Fatal("string unused for generations still in the table")
	}
}

// TestResentCachedObjectsAreNotWritten: a source that sends the cached
// objects themselves again (as fakes do) while handlers read them: the
// default transform must not write them (run with -race).
func TestResentCachedObjectsAreNotWritten(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 20 {
		pods = append(pods, realisticPod(i))
	}
	srv := newFakeServer(pods...)
	inf, err := New[*corev1.Pod](srv, Options[*corev1.Pod]{Reflector: reflector.Options{DisableWatchList: true}})
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	if _, err := inf.AddHandler(HandlerFuncs[*corev1.Pod]{UpdateFunc: func(_, p *corev1.Pod) {
		if _, err := json.Marshal(p); err != nil {
			t.Error(err)
		}
		reads.Add(1)
	}}, HandlerOptions{ResyncPeriod: NoResync}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := start(t, inf)
	defer stop()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	<-srv.watchOpened
	cached := inf.List()
	want := make([]*corev1.Pod, len(cached))
	for i, p := range cached {
		want[i] = p.DeepCopy()
	}
	const rounds = 20
	for range rounds {
		srv.mu.Lock()
		for _, p := range cached {
			srv.watch.ch <- reflector.Event[*corev1.Pod]{Type: watch.Modified, Object: p}
		}
		srv.mu.Unlock()
	}
	for reads.Load() < int64(rounds*len(cached)) {
		runtime.Gosched()
	}
	for i, p := range cached {
		if !reflect.DeepEqual(p, want[i]) {
			t.Fatalf("cached %s/%s changed", p.Namespace, p.Name)
		}
	}
}

// TestShareMaps: equal labels, annotations and resource lists of cached
// objects are one map; unequal ones are not; contents never change.
func TestShareMaps(t *testing.T) {
	in := &interner{}
	a, b := decodedPods(t) // two Pods of one ReplicaSet, other names
	c, _ := decodedPods(t)
	c.Labels["tier"] = "other"
	c.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
	// Any map[string]string of a typed object is shared as labels are.
	for i, p := range []*corev1.Pod{a, b, c} {
		p.Spec.NodeSelector = map[string]string{strings.Clone("pool"): strings.Clone("web"), "zone": fmt.Sprint("z", i/2)}
	}
	want := []*corev1.Pod{a.DeepCopy(), b.DeepCopy(), c.DeepCopy()}
	for _, p := range []*corev1.Pod{a, b, c} {
		in.internObject(p, nil)
	}
	for i, p := range []*corev1.Pod{a, b, c} {
		if !reflect.DeepEqual(p, want[i]) {
			t.Fatalf("pod %d: sharing changed the content", i)
		}
	}
	ra, rb, rc := a.Spec.Containers[0].Resources, b.Spec.Containers[0].Resources, c.Spec.Containers[0].Resources
	for name, same := range map[string]bool{
		"labels a b":       samePtr(a.Labels, b.Labels),
		"annotations a b":  samePtr(a.Annotations, b.Annotations),
		"limits a b":       samePtr(ra.Limits, rb.Limits),
		"requests a b":     samePtr(ra.Requests, rb.Requests),
		"requests a c":     samePtr(ra.Requests, rc.Requests),
		"nodeSelector a b": samePtr(a.Spec.NodeSelector, b.Spec.NodeSelector),
	} {
		if !same {
			t.Errorf("%s not shared", name)
		}
	}
	for name, same := range map[string]bool{
		"labels a c":       samePtr(a.Labels, c.Labels),
		"limits a c":       samePtr(ra.Limits, rc.Limits),
		"nodeSelector a c": samePtr(a.Spec.NodeSelector, c.Spec.NodeSelector),
	} {
		if same {
			t.Errorf("%s shared though different", name)
		}
	}
}

// TestLargeMapsNotShared: a map[string]string outside metadata with more
// than maxSharedMap bytes of content (a ConfigMap holding a document) is not
// shared between objects, so that the tables of shared maps never keep one
// alive; its keys are still interned, and a small one is shared.
func TestLargeMapsNotShared(t *testing.T) {
	in := &interner{}
	doc := strings.Repeat("x", maxSharedMap)
	mk := func(name, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Data: map[string]string{strings.Clone("config.yaml"): strings.Clone(data)}}
	}
	bigA, bigB := mk("a", doc), mk("b", doc)
	smallA, smallB := mk("c", "short"), mk("d", "short")
	for _, cm := range []*corev1.ConfigMap{bigA, bigB, smallA, smallB} {
		in.internObject(cm, nil)
	}
	if bigA.Data["config.yaml"] != doc || bigB.Data["config.yaml"] != doc {
		t.Fatal("interning changed a large map's content")
	}
	if samePtr(bigA.Data, bigB.Data) {
		t.Error("two large data maps shared")
	}
	if !samePtr(smallA.Data, smallB.Data) {
		t.Error("two small equal data maps not shared")
	}
	var keyA, keyB string
	for k := range bigA.Data {
		keyA = k
	}
	for k := range bigB.Data {
		keyB = k
	}
	if unsafe.StringData(keyA) != unsafe.StringData(keyB) {
		t.Error("the keys of two large maps not interned")
	}
}

// TestMutationOfSharedMapDetected: the mutation detector still reports a
// handler that writes a cached object's map, even when the map is shared.
func TestMutationOfSharedMapDetected(t *testing.T) {
	srv := newFakeServer(realisticPod(0), realisticPod(1))
	inf, err := New[*corev1.Pod](srv, Options[*corev1.Pod]{DetectMutations: true, OnMutation: func(error) {}, Reflector: quickReflector})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := start(t, inf)
	defer stop()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	pods := inf.List()
	if len(pods) != 2 || !samePtr(pods[0].Labels, pods[1].Labels) {
		t.Fatal("labels of the two Pods not shared")
	}
	if err := inf.Check(); err != nil {
		t.Fatalf("Check before any mutation: %v", err)
	}
	pods[0].Labels["mutated"] = "yes" // a contract violation, on purpose
	err = inf.Check()
	var me *cache.MutationError
	if !errors.As(err, &me) {
		t.Fatalf("Check = %v, want a MutationError", err)
	}
	delete(pods[0].Labels, "mutated")
}
