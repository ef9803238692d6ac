package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The fast path of field management (managedfields_fast.go) against the
// field manager: whenever fastManagedFields answers, its managedFields are
// the field manager's (times aside: both stamp the writer's entry with the
// current second).

// fastPathObject is a stored object the differential checks mutate.
type fastPathObject struct {
	gvr  schema.GroupVersionResource
	ns   string
	name string
}

// fastPathServer stores the patch fuzz targets' objects with managedFields
// from several managers: creates, then updates by "ctrl" (of data or spec
// and status) and by a second manager.
func fastPathServer(tb testing.TB) (*Server, []fastPathObject) {
	s, err := New(Options{Token: "t", HistoryEvents: 64})
	if err != nil {
		tb.Fatal(err)
	}
	do := func(method, path, ctype, body string, want int) {
		tb.Helper()
		if rec := fuzzRequest(s, method, path, ctype, body); rec.Code != want {
			tb.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", fuzzWidgetCRD, http.StatusCreated)
	do("POST", "/api/v1/namespaces/default/configmaps?fieldManager=creator", "application/json", fuzzConfigMapBody, http.StatusCreated)
	do("POST", "/apis/apps/v1/namespaces/default/deployments?fieldManager=creator", "application/json", fuzzDeploymentBody, http.StatusCreated)
	do("POST", "/apis/fuzz.example.com/v1/namespaces/default/widgets?fieldManager=creator", "application/json", fuzzWidgetBody, http.StatusCreated)
	merge := "application/merge-patch+json"
	do("PATCH", "/api/v1/namespaces/default/configmaps/cm?fieldManager=ctrl", merge, `{"data":{"k":"v2","n":"1"}}`, http.StatusOK)
	do("PATCH", "/api/v1/namespaces/default/configmaps/cm?fieldManager=other", merge, `{"data":{"o":"1"},"metadata":{"labels":{"o":"1"}}}`, http.StatusOK)
	do("PATCH", "/apis/apps/v1/namespaces/default/deployments/d?fieldManager=ctrl", merge, `{"spec":{"replicas":3,"paused":false}}`, http.StatusOK)
	do("PATCH", "/apis/apps/v1/namespaces/default/deployments/d/status?fieldManager=ctrl", merge, `{"status":{"replicas":1,"observedGeneration":1}}`, http.StatusOK)
	do("PATCH", "/apis/fuzz.example.com/v1/namespaces/default/widgets/w?fieldManager=ctrl", merge, `{"spec":{"color":"green","extra":{"n":1}}}`, http.StatusOK)
	do("PATCH", "/apis/fuzz.example.com/v1/namespaces/default/widgets/w/status?fieldManager=ctrl", merge, `{"status":{"replicas":2}}`, http.StatusOK)
	do("PATCH", "/apis/fuzz.example.com/v1/namespaces/default/widgets/w?fieldManager=applier&force=true", "application/apply-patch+yaml",
		`{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":4}}`, http.StatusOK)
	return s, []fastPathObject{
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default", "cm"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "default", "d"},
		{schema.GroupVersionResource{Group: "fuzz.example.com", Version: "v1", Resource: "widgets"}, "default", "w"},
	}
}

// scalarPaths lists the paths of obj's scalar values reached through
// objects alone, metadata aside, sorted.
func scalarPaths(v any, path []string, out *[][]string) {
	m, ok := v.(map[string]any)
	if !ok {
		if scalarKind(v) != "" && len(path) > 0 && path[0] != "metadata" {
			*out = append(*out, slices.Clone(path))
		}
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		scalarPaths(m[k], append(path, k), out)
	}
}

// mutate changes obj (a copy of a stored object) as ops say, two bytes per
// change: which scalar value, and what to do to it (a new value of its
// kind, of another kind, a null, its key removed, a key added beside it).
func mutate(obj map[string]any, ops []byte) {
	for i := 0; i+1 < len(ops); i += 2 {
		var paths [][]string
		scalarPaths(obj, nil, &paths)
		if len(paths) == 0 {
			return
		}
		p := paths[int(ops[i])%len(paths)]
		parent := obj
		for _, k := range p[:len(p)-1] {
			parent = parent[k].(map[string]any)
		}
		leaf := p[len(p)-1]
		switch ops[i+1] % 8 {
		case 0, 1, 2, 3: // a new value of the same kind
			switch v := parent[leaf].(type) {
			case string:
				parent[leaf] = v + string(rune('a'+ops[i+1]%26))
			case bool:
				parent[leaf] = !v
			case int64:
				parent[leaf] = v + int64(ops[i+1])
			case float64:
				parent[leaf] = v + 0.5
			}
		case 4:
			parent[leaf] = int64(ops[i+1])
		case 5:
			parent[leaf] = nil
		case 6:
			delete(parent, leaf)
		case 7:
			parent[leaf+"x"] = "added"
		}
	}
}

// normalizedEntries is managedFields without times, sorted by what the
// field manager sorts them by after the time.
func normalizedEntries(t *testing.T, mf any) string {
	entries, _ := runtime.DeepCopyJSONValue(mf).([]any)
	for _, e := range entries {
		delete(e.(map[string]any), "time")
	}
	slices.SortFunc(entries, func(a, b any) int {
		key := func(e any) string {
			m := e.(map[string]any)
			return fmt.Sprint(m["operation"], "|", m["manager"], "|", m["apiVersion"], "|", m["subresource"])
		}
		return strings.Compare(key(a), key(b))
	})
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkFastPath compares the fast path with the field manager on an update
// of o by manager through sub, mutated by ops.
func checkFastPath(t *testing.T, s *Server, o fastPathObject, manager, sub string, ops []byte) (fast bool) {
	k := s.reg.get(o.gvr)
	cur, err := s.store.Get(k.storageResource, o.ns, o.name)
	if err != nil {
		t.Fatal(err)
	}
	old, err := decodeMap(cur.Data)
	if err != nil {
		t.Fatal(err)
	}
	obj := runtime.DeepCopyJSON(old)
	mutate(obj, ops)
	entries, ok := fastManagedFields(obj, old, manager, k.apiVersion(), sub, time.Now())
	if !ok {
		return false
	}
	want := meta(old)["managedFields"]
	if out, err := s.updateManagedFields(k, sub, runtime.DeepCopyJSON(obj), old, manager); err == nil {
		want = meta(out)["managedFields"]
	}
	if got, want := normalizedEntries(t, entries), normalizedEntries(t, want); got != want {
		t.Fatalf("%s by %s (sub %q, ops %v): fast path\n%s\nfield manager\n%s", o.name, manager, sub, ops, got, want)
	}
	return true
}

// TestFastManagedFieldsDifferential: the usual writes (a controller writing
// again the fields it owns) take the fast path and agree with the field
// manager; the others do not take it.
func TestFastManagedFieldsDifferential(t *testing.T) {
	s, objs := fastPathServer(t)
	cm, deploy, widget := objs[0], objs[1], objs[2]
	pathIndex := func(o fastPathObject, want ...string) byte {
		k := s.reg.get(o.gvr)
		cur, _ := s.store.Get(k.storageResource, o.ns, o.name)
		m, _ := decodeMap(cur.Data)
		var paths [][]string
		scalarPaths(m, nil, &paths)
		for i, p := range paths {
			if slices.Equal(p, want) {
				return byte(i)
			}
		}
		t.Fatalf("%s has no scalar at %v", o.name, want)
		return 0
	}
	for _, tc := range []struct {
		name    string
		o       fastPathObject
		manager string
		sub     string
		ops     []byte
		fast    bool
	}{
		{"no change", cm, "ctrl", "", nil, true},
		{"own data value", cm, "ctrl", "", []byte{pathIndex(cm, "data", "k"), 1}, true},
		{"own and another's value", cm, "ctrl", "", []byte{pathIndex(cm, "data", "k"), 1, pathIndex(cm, "data", "o"), 1}, false},
		{"another's value", cm, "ctrl", "", []byte{pathIndex(cm, "data", "o"), 1}, false},
		{"a new manager", cm, "newcomer", "", []byte{pathIndex(cm, "data", "k"), 1}, false},
		{"a key removed", cm, "ctrl", "", []byte{pathIndex(cm, "data", "k"), 6}, false},
		{"a key added", cm, "ctrl", "", []byte{pathIndex(cm, "data", "k"), 7}, false},
		{"a null", cm, "ctrl", "", []byte{pathIndex(cm, "data", "k"), 5}, false},
		{"a type change", cm, "ctrl", "", []byte{pathIndex(cm, "data", "k"), 4}, false},
		{"own spec value", deploy, "ctrl", "", []byte{pathIndex(deploy, "spec", "replicas"), 1}, true},
		{"own status value through status", deploy, "ctrl", "status", []byte{pathIndex(deploy, "status", "replicas"), 1}, true},
		{"status value through the main resource", deploy, "ctrl", "", []byte{pathIndex(deploy, "status", "replicas"), 1}, false},
		{"creator's value", deploy, "creator", "", []byte{pathIndex(deploy, "spec", "replicas"), 1}, false},
		{"custom resource spec", widget, "ctrl", "", []byte{pathIndex(widget, "spec", "color"), 1}, true},
		{"custom resource status", widget, "ctrl", "status", []byte{pathIndex(widget, "status", "replicas"), 1}, true},
		{"applied field by an updater", widget, "ctrl", "", []byte{pathIndex(widget, "spec", "replicas"), 1}, false},
		{"preserved unknown field", widget, "ctrl", "", []byte{pathIndex(widget, "spec", "extra", "n"), 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkFastPath(t, s, tc.o, tc.manager, tc.sub, tc.ops); got != tc.fast {
				t.Fatalf("fast path taken: %v, want %v", got, tc.fast)
			}
		})
	}
}

// TestFastManagedFieldsThroughWrites: PUTs of a ConfigMap's owned value by
// its manager take the fast path (the stored managedFields keep their
// entries; the manager's time moves) and are what the field manager
// records, seen through the API.
func TestFastManagedFieldsThroughWrites(t *testing.T) {
	s, _ := fastPathServer(t)
	get := func() map[string]any {
		rec := fuzzRequest(s, "GET", "/api/v1/namespaces/default/configmaps/cm", "", "")
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := get()
	for i := range 3 {
		body := before
		body = runtime.DeepCopyJSON(body)
		delete(meta(body), "managedFields")
		delete(meta(body), "resourceVersion")
		body["data"].(map[string]any)["k"] = fmt.Sprint("v", i+10)
		b, _ := json.Marshal(body)
		if rec := fuzzRequest(s, "PUT", "/api/v1/namespaces/default/configmaps/cm?fieldManager=ctrl", "application/json", string(b)); rec.Code != http.StatusOK {
			t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
		}
	}
	after := get()
	if got, want := normalizedEntries(t, meta(after)["managedFields"]), normalizedEntries(t, meta(before)["managedFields"]); got != want {
		t.Fatalf("managedFields after owned updates\n%s\nwant\n%s", got, want)
	}
}

// FuzzFastManagedFields mutates the stored objects at random and checks
// that the fast path, whenever it answers, agrees with the field manager.
func FuzzFastManagedFields(f *testing.F) {
	for _, seed := range []struct {
		target, manager uint8
		status          bool
		ops             []byte
	}{
		{0, 0, false, []byte{3, 0}}, {0, 1, false, []byte{1, 1, 2, 2}}, {1, 0, false, []byte{5, 0}},
		{1, 0, true, []byte{9, 1}}, {2, 0, false, []byte{0, 0}}, {2, 0, true, []byte{7, 3, 1, 6}},
		{2, 2, false, []byte{2, 7}}, {0, 0, false, nil},
	} {
		f.Add(seed.target, seed.manager, seed.status, seed.ops)
	}
	s, objs := fastPathServer(f)
	managers := []string{"ctrl", "other", "applier", "creator", ""}
	f.Fuzz(func(t *testing.T, target, manager uint8, status bool, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		sub := ""
		if status {
			sub = "status"
		}
		o := objs[int(target)%len(objs)]
		if o.name == "cm" && status {
			sub = ""
		}
		checkFastPath(t, s, o, managers[int(manager)%len(managers)], sub, ops)
	})
}
