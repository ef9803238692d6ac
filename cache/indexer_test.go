package cache

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// pod returns a Pod; labels are "key=value" strings.
func pod(ns, name, rv string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
	return p
}

// byApp indexes Pods by their "app" label.
func byApp(p *corev1.Pod) ([]string, error) {
	if v, ok := p.Labels["app"]; ok {
		return []string{v}, nil
	}
	return nil, nil
}

// byLabel indexes Pods under every "key=value" label (multi-valued).
func byLabel(p *corev1.Pod) ([]string, error) {
	var out []string
	for k, v := range p.Labels {
		out = append(out, k+"="+v)
	}
	return out, nil
}

var errBadLabel = errors.New("label bad=yes is refused")

// refuseBad fails on Pods labelled bad=yes.
func refuseBad(p *corev1.Pod) ([]string, error) {
	if p.Labels["bad"] == "yes" {
		return nil, errBadLabel
	}
	return nil, nil
}

// view renders an Indexer's whole content deterministically:
// "a/x@1 b/y@2 | namespace{a:[a/x] b:[b/y]} | app{web:[a/x]} | rv=10".
func view(t *testing.T, ix *Indexer[*corev1.Pod]) string {
	t.Helper()
	var objs []string
	for _, p := range ix.List() {
		objs = append(objs, Key(p)+"@"+p.ResourceVersion)
	}
	slices.Sort(objs)
	parts := []string{strings.Join(objs, " ")}
	for _, name := range ix.IndexNames() {
		values := ix.ListIndexFuncValues(name)
		slices.Sort(values)
		var bs []string
		for _, v := range values {
			keys, err := ix.IndexKeys(name, v)
			if err != nil {
				t.Fatalf("IndexKeys(%q, %q): %v", name, v, err)
			}
			objs, err := ix.ByIndex(name, v)
			if err != nil || len(objs) != len(keys) {
				t.Fatalf("ByIndex(%q, %q) = %d objects, %v; IndexKeys has %d", name, v, len(objs), err, len(keys))
			}
			slices.Sort(keys)
			bs = append(bs, v+":["+strings.Join(keys, " ")+"]")
		}
		parts = append(parts, name+"{"+strings.Join(bs, " ")+"}")
	}
	parts = append(parts, "rv="+ix.LastSyncResourceVersion())
	return strings.Join(parts, " | ")
}

// checkInvariants verifies the internal structure against the items table.
func checkInvariants[T Object](t *testing.T, ix *Indexer[T]) {
	t.Helper()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := ix.st
	spec := ix.spec.Load()
	if ix.items.Load() != st.items {
		t.Fatalf("the published items table is not the state's")
	}
	checkTable(t, st.items)
	if len(st.all) != st.items.live {
		t.Fatalf("len(all) = %d, items = %d", len(st.all), st.items.live)
	}
	nsCount := 0
	for _, b := range st.ns {
		if len(b.entries) == 0 {
			t.Fatalf("empty namespace bucket")
		}
		nsCount += len(b.entries)
	}
	if st.ns != nil && nsCount != len(st.all) {
		t.Fatalf("namespace buckets hold %d entries, want %d", nsCount, len(st.all))
	}
	if len(st.objs) != len(st.all) {
		t.Fatalf("len(objs) = %d, len(all) = %d", len(st.objs), len(st.all))
	}
	for ns, b := range st.ns {
		if b.ns != ns || len(b.objs) != len(b.entries) {
			t.Fatalf("namespace bucket %q: ns %q, %d objs, %d entries", ns, b.ns, len(b.objs), len(b.entries))
		}
		for i, e := range b.entries {
			if any(b.objs[i]) != any(e.obj) || e.nsb != b {
				t.Fatalf("namespace bucket %q: objs[%d] is not %s's object", ns, i, e.key)
			}
		}
	}
	for i, e := range st.all {
		if any(st.objs[i]) != any(e.obj) {
			t.Fatalf("objs[%d] is not %s's object", i, e.key)
		}
		it := st.items.get(e.key)
		if int(e.pos) != i || it == nil || it.e != e || any(it.obj()) != any(e.obj) || it.key != e.key {
			t.Fatalf("entry %s: pos %d at %d, item %+v", e.key, e.pos, i, it)
		}
		if e.key != Key(e.obj) {
			t.Fatalf("entry %s holds object %s", e.key, Key(e.obj))
		}
		if st.ns != nil {
			b := st.ns[e.obj.GetNamespace()]
			if b == nil || int(e.nsPos) >= len(b.entries) || b.entries[e.nsPos] != e {
				t.Fatalf("entry %s: bad namespace bucket position %d", e.key, e.nsPos)
			}
		}
		for j, fn := range spec.funcs {
			want, err := fn(e.obj)
			if err != nil {
				t.Fatalf("index %s on %s: %v", spec.names[j], e.key, err)
			}
			want = dedup(want)
			if !sameSet(e.vals[j], want) {
				t.Fatalf("entry %s index %s: stored %v, computed %v", e.key, spec.names[j], e.vals[j], want)
			}
			for _, v := range want {
				b := st.custom[j].buckets[v]
				if b == nil || !slices.Contains(b.entries, e) {
					t.Fatalf("entry %s missing from bucket %s=%s", e.key, spec.names[j], v)
				}
			}
		}
	}
	for j := range st.custom {
		for v, b := range st.custom[j].buckets {
			if len(b.entries) == 0 {
				t.Fatalf("empty bucket %s=%s", spec.names[j], v)
			}
			for i, e := range b.entries {
				if it := st.items.get(e.key); it == nil || it.e != e || !slices.Contains(e.vals[j], v) {
					t.Fatalf("stale entry %s in bucket %s=%s", e.key, spec.names[j], v)
				}
				if b.pos != nil && int(b.pos[e]) != i {
					t.Fatalf("bucket %s=%s: pos of %s is %d, at %d", spec.names[j], v, e.key, b.pos[e], i)
				}
			}
			if b.pos != nil && len(b.pos) != len(b.entries) {
				t.Fatalf("bucket %s=%s: %d positions for %d entries", spec.names[j], v, len(b.pos), len(b.entries))
			}
		}
	}
}

type step struct {
	op      string // add, update, delete, deleteKey, replace, addIndex
	objs    []*corev1.Pod
	key     string
	rv      string
	index   map[string]IndexFunc[*corev1.Pod]
	wantErr error
	want    string
}

func TestIndexerTranscript(t *testing.T) {
	manyWeb := make([]*corev1.Pod, 0, 40)
	for i := range 40 {
		manyWeb = append(manyWeb, pod("b", fmt.Sprintf("w%02d", i), "7", "app=web"))
	}
	tests := []struct {
		name  string
		opts  Options[*corev1.Pod]
		steps []step
	}{
		{
			name: "add update delete with namespace and custom index",
			opts: Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"app": byApp}},
			steps: []step{
				{op: "add", objs: []*corev1.Pod{pod("a", "x", "1", "app=web"), pod("b", "y", "2", "app=db"), pod("", "node", "3")},
					want: "a/x@1 b/y@2 node@3 | namespace{:[node] a:[a/x] b:[b/y]} | app{db:[b/y] web:[a/x]} | rv="},
				{op: "update", objs: []*corev1.Pod{pod("a", "x", "4", "app=db")},
					want: "a/x@4 b/y@2 node@3 | namespace{:[node] a:[a/x] b:[b/y]} | app{db:[a/x b/y]} | rv="},
				{op: "add", objs: []*corev1.Pod{pod("b", "y", "5")}, // Add of an existing key replaces it
					want: "a/x@4 b/y@5 node@3 | namespace{:[node] a:[a/x] b:[b/y]} | app{db:[a/x]} | rv="},
				{op: "update", objs: []*corev1.Pod{pod("c", "z", "6", "app=web")}, // Update of a new key inserts it
					want: "a/x@4 b/y@5 c/z@6 node@3 | namespace{:[node] a:[a/x] b:[b/y] c:[c/z]} | app{db:[a/x] web:[c/z]} | rv="},
				{op: "delete", objs: []*corev1.Pod{pod("a", "x", "")},
					want: "b/y@5 c/z@6 node@3 | namespace{:[node] b:[b/y] c:[c/z]} | app{web:[c/z]} | rv="},
				{op: "delete", objs: []*corev1.Pod{pod("a", "x", "")}, // deleting an absent key is fine
					want: "b/y@5 c/z@6 node@3 | namespace{:[node] b:[b/y] c:[c/z]} | app{web:[c/z]} | rv="},
				{op: "deleteKey", key: "node",
					want: "b/y@5 c/z@6 | namespace{b:[b/y] c:[c/z]} | app{web:[c/z]} | rv="},
				{op: "deleteKey", key: "a/b/c", wantErr: ErrInvalidKey,
					want: "b/y@5 c/z@6 | namespace{b:[b/y] c:[c/z]} | app{web:[c/z]} | rv="},
			},
		},
		{
			name: "replace swaps everything and records the resourceVersion",
			opts: Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"app": byApp}},
			steps: []step{
				{op: "add", objs: []*corev1.Pod{pod("a", "x", "1", "app=web"), pod("a", "y", "2", "app=web")},
					want: "a/x@1 a/y@2 | namespace{a:[a/x a/y]} | app{web:[a/x a/y]} | rv="},
				{op: "replace", rv: "10", objs: []*corev1.Pod{pod("a", "y", "8", "app=db"), pod("b", "z", "9"), pod("b", "z", "10", "app=web")},
					want: "a/y@8 b/z@10 | namespace{a:[a/y] b:[b/z]} | app{db:[a/y] web:[b/z]} | rv=10"},
				{op: "replace", rv: "11", objs: []*corev1.Pod{pod("a", "ok", "11"), nil}, wantErr: ErrInvalidObject,
					want: "a/y@8 b/z@10 | namespace{a:[a/y] b:[b/z]} | app{db:[a/y] web:[b/z]} | rv=10"},
				{op: "replace", rv: "12",
					want: " | namespace{} | app{} | rv=12"},
			},
		},
		{
			name: "multi-valued index and large buckets",
			opts: Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"label": byLabel}},
			steps: []step{
				{op: "add", objs: []*corev1.Pod{pod("a", "x", "1", "app=web", "tier=front"), pod("a", "y", "2", "tier=front")},
					want: "a/x@1 a/y@2 | namespace{a:[a/x a/y]} | label{app=web:[a/x] tier=front:[a/x a/y]} | rv="},
				{op: "update", objs: []*corev1.Pod{pod("a", "x", "3", "app=web", "tier=back")},
					want: "a/x@3 a/y@2 | namespace{a:[a/x a/y]} | label{app=web:[a/x] tier=back:[a/x] tier=front:[a/y]} | rv="},
				{op: "add", objs: manyWeb[:35]},
				{op: "delete", objs: []*corev1.Pod{manyWeb[0], manyWeb[17], manyWeb[34]}},
				{op: "add", objs: manyWeb[35:]},
				{op: "delete", objs: manyWeb},
				{op: "delete", objs: []*corev1.Pod{pod("a", "y", "")},
					want: "a/x@3 | namespace{a:[a/x]} | label{app=web:[a/x] tier=back:[a/x]} | rv="},
			},
		},
		{
			name: "index funcs added after items exist; failures change nothing",
			opts: Options[*corev1.Pod]{},
			steps: []step{
				{op: "add", objs: []*corev1.Pod{pod("a", "x", "1", "app=web"), pod("a", "y", "2", "bad=yes")},
					want: "a/x@1 a/y@2 | namespace{a:[a/x a/y]} | rv="},
				{op: "addIndex", index: map[string]IndexFunc[*corev1.Pod]{"app": byApp, "refuse": refuseBad}, wantErr: errBadLabel,
					want: "a/x@1 a/y@2 | namespace{a:[a/x a/y]} | rv="},
				{op: "addIndex", index: map[string]IndexFunc[*corev1.Pod]{"app": byApp},
					want: "a/x@1 a/y@2 | namespace{a:[a/x a/y]} | app{web:[a/x]} | rv="},
				{op: "addIndex", index: map[string]IndexFunc[*corev1.Pod]{"app": byApp}, wantErr: ErrIndexConflict,
					want: "a/x@1 a/y@2 | namespace{a:[a/x a/y]} | app{web:[a/x]} | rv="},
				{op: "addIndex", index: map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: byApp}, wantErr: ErrIndexConflict},
				{op: "addIndex", index: map[string]IndexFunc[*corev1.Pod]{"nil": nil}, wantErr: ErrIndexConflict},
				{op: "delete", objs: []*corev1.Pod{pod("a", "y", "")}},
				{op: "addIndex", index: map[string]IndexFunc[*corev1.Pod]{"refuse": refuseBad, "label": byLabel},
					want: "a/x@1 | namespace{a:[a/x]} | app{web:[a/x]} | label{app=web:[a/x]} | refuse{} | rv="},
				{op: "add", objs: []*corev1.Pod{pod("a", "z", "3", "bad=yes")}, wantErr: errBadLabel,
					want: "a/x@1 | namespace{a:[a/x]} | app{web:[a/x]} | label{app=web:[a/x]} | refuse{} | rv="},
				{op: "update", objs: []*corev1.Pod{pod("a", "x", "4", "bad=yes")}, wantErr: errBadLabel,
					want: "a/x@1 | namespace{a:[a/x]} | app{web:[a/x]} | label{app=web:[a/x]} | refuse{} | rv="},
				{op: "add", objs: []*corev1.Pod{pod("a", "", "5")}, wantErr: ErrInvalidObject},
				{op: "add", objs: []*corev1.Pod{nil}, wantErr: ErrInvalidObject},
				{op: "delete", objs: []*corev1.Pod{nil}, wantErr: ErrInvalidObject,
					want: "a/x@1 | namespace{a:[a/x]} | app{web:[a/x]} | label{app=web:[a/x]} | refuse{} | rv="},
			},
		},
		{
			name: "namespace index disabled and replaced by a custom one",
			opts: Options[*corev1.Pod]{DisableNamespaceIndex: true, Indexers: map[string]IndexFunc[*corev1.Pod]{
				NamespaceIndex: func(p *corev1.Pod) ([]string, error) { return []string{"ns-" + p.Namespace}, nil },
			}},
			steps: []step{
				{op: "add", objs: []*corev1.Pod{pod("a", "x", "1"), pod("b", "y", "2")},
					want: "a/x@1 b/y@2 | namespace{ns-a:[a/x] ns-b:[b/y]} | rv="},
			},
		},
	}
	// Each transcript runs with Replace, and with ReplaceFrom fed the same
	// objects in batches of two: the outcome is the same.
	for _, tt := range tests {
		for _, from := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ReplaceFrom=%t", tt.name, from), func(t *testing.T) {
				runTranscript(t, tt.opts, tt.steps, from)
			})
		}
	}
}

// replaceFrom calls ReplaceFrom with objs sent in batches of two.
func replaceFrom(ix *Indexer[*corev1.Pod], objs []*corev1.Pod, rv string) error {
	batches := make(chan []*corev1.Pod)
	go func() {
		defer close(batches)
		for i := 0; i < len(objs); i += 2 {
			batches <- objs[i:min(i+2, len(objs))]
		}
	}()
	return ix.ReplaceFrom(len(objs), batches, rv)
}

func runTranscript(t *testing.T, opts Options[*corev1.Pod], steps []step, from bool) {
	ix, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		var err error
		switch s.op {
		case "add", "update", "delete":
			for _, p := range s.objs {
				var e error
				switch s.op {
				case "add":
					e = ix.Add(p)
				case "update":
					e = ix.Update(p)
				case "delete":
					e = ix.Delete(p)
				}
				err = errors.Join(err, e)
				if e == nil && s.op != "delete" {
					if got, ok := ix.Get(p.Namespace, p.Name); !ok || got != p {
						t.Fatalf("step %d: Get after %s did not return the stored pointer", i, s.op)
					}
				}
			}
		case "deleteKey":
			err = ix.DeleteByKey(s.key)
		case "replace":
			if from {
				err = replaceFrom(ix, s.objs, s.rv)
			} else {
				err = ix.Replace(s.objs, s.rv)
			}
		case "addIndex":
			err = ix.AddIndexers(s.index)
		default:
			t.Fatalf("unknown op %q", s.op)
		}
		if s.wantErr == nil && err != nil || s.wantErr != nil && !errors.Is(err, s.wantErr) {
			t.Fatalf("step %d (%s): error %v, want %v", i, s.op, err, s.wantErr)
		}
		checkInvariants(t, ix)
		if s.want != "" {
			if got := view(t, ix); got != s.want {
				t.Fatalf("step %d (%s):\n got %s\nwant %s", i, s.op, got, s.want)
			}
		}
	}
}

func TestReadsAndErrors(t *testing.T) {
	ix, err := New(Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	a, n := pod("a", "x", "1"), pod("", "node", "2")
	for _, p := range []*corev1.Pod{a, n} {
		if err := ix.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok := ix.Get("a", "x"); !ok || got != a {
		t.Errorf("Get(a, x) = %v, %v", got, ok)
	}
	if got, ok := ix.Get("", "node"); !ok || got != n {
		t.Errorf("Get(\"\", node) = %v, %v", got, ok)
	}
	if got, ok := ix.GetByKey("a/x"); !ok || got != a {
		t.Errorf("GetByKey(a/x) = %v, %v", got, ok)
	}
	if got, ok := ix.GetByKey("b/x"); ok || got != nil {
		t.Errorf("GetByKey(b/x) = %v, %v; want nil, false", got, ok)
	}
	if _, ok := ix.Get("b", "x"); ok {
		t.Errorf("Get(b, x) found an object")
	}
	if ix.Len() != 2 {
		t.Errorf("Len = %d", ix.Len())
	}
	keys := ix.ListKeys()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a/x", "node"}) {
		t.Errorf("ListKeys = %v", keys)
	}
	if objs, err := ix.ByIndex(NamespaceIndex, "zzz"); err != nil || len(objs) != 0 {
		t.Errorf("ByIndex of an absent value = %v, %v", objs, err)
	}
	if _, err := ix.ByIndex("nope", "x"); !errors.Is(err, ErrUnknownIndex) {
		t.Errorf("ByIndex(nope) error = %v, want ErrUnknownIndex", err)
	}
	if _, err := ix.IndexKeys("nope", "x"); !errors.Is(err, ErrUnknownIndex) {
		t.Errorf("IndexKeys(nope) error = %v, want ErrUnknownIndex", err)
	}
	if v := ix.ListIndexFuncValues("nope"); v != nil {
		t.Errorf("ListIndexFuncValues(nope) = %v", v)
	}
	a2 := pod("a", "x", "3")
	if old, replaced, err := ix.Swap(a2); err != nil || !replaced || old != a {
		t.Errorf("Swap(a/x) = %v, %v, %v; want the previous object", old, replaced, err)
	}
	b := pod("b", "y", "4")
	if old, replaced, err := ix.Swap(b); err != nil || replaced || old != nil {
		t.Errorf("Swap(b/y) = %v, %v, %v; want nothing replaced", old, replaced, err)
	}
	if _, _, err := ix.Swap(nil); !errors.Is(err, ErrInvalidObject) {
		t.Errorf("Swap(nil) error = %v", err)
	}
	if old, deleted, err := ix.LoadAndDelete("b/y"); err != nil || !deleted || old != b {
		t.Errorf("LoadAndDelete(b/y) = %v, %v, %v", old, deleted, err)
	}
	if old, deleted, err := ix.LoadAndDelete("b/y"); err != nil || deleted || old != nil {
		t.Errorf("second LoadAndDelete(b/y) = %v, %v, %v", old, deleted, err)
	}
	if _, _, err := ix.LoadAndDelete("/"); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("LoadAndDelete(/) error = %v", err)
	}
	checkInvariants(t, ix)
	if err := ix.Check(); !errors.Is(err, ErrMutationDetectionOff) {
		t.Errorf("Check without detection = %v, want ErrMutationDetectionOff", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options[*corev1.Pod]
		ok   bool
	}{
		{name: "zero value", ok: true},
		{name: "custom index", opts: Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"app": byApp}}, ok: true},
		{name: "empty index name", opts: Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"": byApp}}},
		{name: "nil index func", opts: Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"app": nil}}},
		{name: "namespace taken", opts: Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: byApp}}},
		{name: "OnMutation without detection", opts: Options[*corev1.Pod]{OnMutation: func(error) {}}},
	}
	for _, tt := range tests {
		_, err := New(tt.opts)
		if (err == nil) != tt.ok {
			t.Errorf("%s: New error = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

// TestOtherObjectTypes runs the Indexer with unstructured and metadata-only
// objects: T is any Kubernetes object.
func TestOtherObjectTypes(t *testing.T) {
	u, err := New(Options[*unstructured.Unstructured]{Indexers: map[string]IndexFunc[*unstructured.Unstructured]{
		"kind": func(o *unstructured.Unstructured) ([]string, error) { return []string{o.GetKind()}, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("example.com/v1")
	w.SetKind("Widget")
	w.SetNamespace("a")
	w.SetName("w")
	if err := u.Add(w); err != nil {
		t.Fatal(err)
	}
	if got, err := u.ByIndex("kind", "Widget"); err != nil || len(got) != 1 || got[0] != w {
		t.Errorf("ByIndex(kind, Widget) = %v, %v", got, err)
	}
	checkInvariants(t, u)

	m, err := New(Options[*metav1.PartialObjectMetadata]{})
	if err != nil {
		t.Fatal(err)
	}
	pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	if err := m.Replace([]*metav1.PartialObjectMetadata{pm}, "3"); err != nil {
		t.Fatal(err)
	}
	if got, ok := m.GetByKey("n"); !ok || got != pm {
		t.Errorf("GetByKey(n) = %v, %v", got, ok)
	}
	checkInvariants(t, m)
}

func TestDedup(t *testing.T) {
	long := make([]string, 0, 40)
	for i := range 20 {
		long = append(long, fmt.Sprint(i), fmt.Sprint(i))
	}
	tests := []struct{ in, want []string }{
		{nil, nil},
		{[]string{"a"}, []string{"a"}},
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a", "b", "a"}, []string{"a", "b"}},
		{long, long[:0:0]},
	}
	tests[4].want = nil
	for i := range 20 {
		tests[4].want = append(tests[4].want, fmt.Sprint(i))
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		if got := dedup(in); !slices.Equal(got, tt.want) {
			t.Errorf("dedup(%v) = %v, want %v", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("dedup modified its input %v", tt.in)
		}
	}
}

func TestSameSet(t *testing.T) {
	var big, bigRev []string
	for i := range 20 {
		big = append(big, fmt.Sprint(i))
		bigRev = append([]string{fmt.Sprint(i)}, bigRev...)
	}
	tests := []struct {
		a, b []string
		want bool
	}{
		{nil, nil, true},
		{nil, []string{}, true},
		{[]string{"a", "b"}, []string{"b", "a"}, true},
		{[]string{"a", "b"}, []string{"a", "c"}, false},
		{[]string{"a"}, []string{"a", "b"}, false},
		{big, bigRev, true},
		{big, append(slices.Clone(bigRev[1:]), "x"), false},
	}
	for _, tt := range tests {
		if got := sameSet(tt.a, tt.b); got != tt.want {
			t.Errorf("sameSet(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestReplaceFromAcrossAddIndexers: an index added while ReplaceFrom
// receives its batches (readers and writers go on between batches) covers
// the whole new content once it is swapped in.
func TestReplaceFromAcrossAddIndexers(t *testing.T) {
	ix, err := New(Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(pod("a", "old", "1", "app=db")); err != nil {
		t.Fatal(err)
	}
	batches := make(chan []*corev1.Pod)
	done := make(chan error)
	go func() { done <- ix.ReplaceFrom(3, batches, "9") }()
	batches <- []*corev1.Pod{pod("a", "x", "5", "app=web")}
	if err := ix.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"app": byApp}); err != nil {
		t.Fatal(err)
	}
	if got, ok := ix.Get("a", "old"); !ok || got.ResourceVersion != "1" {
		t.Fatal("the content changed before the last batch")
	}
	batches <- []*corev1.Pod{pod("b", "y", "6", "app=web"), pod("b", "z", "7", "app=db")}
	close(batches)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, ix)
	want := "a/x@5 b/y@6 b/z@7 | namespace{a:[a/x] b:[b/y b/z]} | app{db:[b/z] web:[a/x b/y]} | rv=9"
	if got := view(t, ix); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}
