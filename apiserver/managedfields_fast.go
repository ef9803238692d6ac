package apiserver

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// The fast path of field management: the most common write of all — a
// controller or a client writing again the scalar fields it wrote before
// (a counter in data, a status field) with an Update — changes nothing in
// managedFields but the writer's timestamp. fastManagedFields recognizes
// that case on the JSON trees, without the field manager's typed
// conversions (which cost ≈ 45 µs of CPU per small write), and says
// nothing (ok false) in every other case, for the field manager to decide.
// managedfields_fast_test.go checks it against the field manager
// (differential test and fuzz target).

// fastManagedFields returns the managedFields of obj, the stored form of an
// Update of old by manager through sub ("" or "status") of a kind served at
// apiVersion, at time now, when they follow from the trees alone: obj
// carries old's managedFields (or none: the field manager then takes old's)
// and differs from old only in scalar values reached through objects alone
// (no list changed, no key added or removed), every one of them owned by
// manager's Update entry for apiVersion and sub, and by no other entry.
// The answer is old's managedFields, with that entry's time set to now
// when a value changed, sorted as the field manager sorts them.
func fastManagedFields(obj, old map[string]any, manager, apiVersion, sub string, now time.Time) ([]any, bool) {
	if sub != "" && sub != "status" {
		return nil, false
	}
	if manager == "" {
		manager = "unknown" // the field manager's name for a write that names none
	}
	om, nm := meta(old), meta(obj)
	entries, ok := om["managedFields"].([]any)
	if !ok || len(entries) == 0 {
		return nil, false
	}
	if mf, sent := nm["managedFields"]; sent && !jsontree.Equal(mf, om["managedFields"]) {
		return nil, false // a write of managedFields: the field manager's rules
	}
	var changed [][]string
	if !scalarChanges(obj, old, nil, &changed) {
		return nil, false
	}
	if len(changed) == 0 {
		return runtime.DeepCopyJSONValue(entries).([]any), true
	}
	own := -1
	updates := 0
	for i, e := range entries {
		em, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		if jsontree.Str(em, "operation") == "Update" {
			updates++
		}
		if jsontree.Str(em, "manager") == manager && jsontree.Str(em, "operation") == "Update" &&
			jsontree.Str(em, "apiVersion") == apiVersion && jsontree.Str(em, "subresource") == sub {
			own = i
		}
	}
	if own < 0 || updates > maxUpdateManagers {
		return nil, false
	}
	for _, p := range changed {
		if len(p) == 0 || p[0] == "metadata" || p[0] == "apiVersion" || p[0] == "kind" {
			return nil, false // what the field manager strips or the server sets
		}
		if (sub == "status") != (p[0] == "status") {
			return nil, false // what the kind's strategy resets
		}
		for i, e := range entries {
			if owns(e.(map[string]any), p) != (i == own) {
				return nil, false
			}
		}
	}
	out := runtime.DeepCopyJSONValue(entries).([]any) // old is read-only
	out[own].(map[string]any)["time"] = now.UTC().Format(time.RFC3339)
	sortManagedFields(out)
	return out, true
}

// maxUpdateManagers is the field manager's cap on Update entries
// (managedfields' DefaultMaxUpdateManagers): past it, it merges the oldest.
const maxUpdateManagers = 10

// scalarChanges appends to changed the paths of the scalar values that
// differ between a and b, reporting false when they differ otherwise (a key
// added or removed, a list changed, a value's type changed, a null).
// metadata.managedFields is skipped.
func scalarChanges(a, b any, path []string, changed *[][]string) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || x == nil || y == nil {
			return false
		}
		inMeta := len(path) == 1 && path[0] == "metadata"
		lx, ly := len(x), len(y)
		if inMeta {
			_, hx := x["managedFields"]
			_, hy := y["managedFields"]
			lx, ly = lx-b2i(hx), ly-b2i(hy)
		}
		if lx != ly {
			return false
		}
		for k, v := range x {
			if inMeta && k == "managedFields" {
				continue
			}
			w, ok := y[k]
			if !ok {
				return false
			}
			if !scalarChanges(v, w, append(path[:len(path):len(path)], k), changed) {
				return false
			}
		}
		return true
	case []any:
		return jsontree.Equal(a, b)
	}
	ka, kb := scalarKind(a), scalarKind(b)
	if ka == "" || ka != kb {
		return false
	}
	if !jsontree.Equal(a, b) {
		*changed = append(*changed, path)
	}
	return true
}

// scalarKind is "string", "bool" or "number" for a JSON scalar, "" for
// anything else (null, an object, a list).
func scalarKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case int64, float64, int, int32, float32, json.Number:
		return "number"
	}
	return ""
}

// owns reports whether the managedFields entry e's fieldsV1 holds path (a
// path of object keys).
func owns(e map[string]any, path []string) bool {
	set, ok := e["fieldsV1"].(map[string]any)
	if !ok {
		return false
	}
	for _, k := range path {
		if set, ok = set["f:"+k].(map[string]any); !ok {
			return false
		}
	}
	return true
}

// sortManagedFields sorts entries as the field manager encodes them: by
// operation, then by the second of their time, then by manager, apiVersion
// and subresource.
func sortManagedFields(entries []any) {
	seconds := func(m map[string]any) int64 {
		t, err := time.Parse(time.RFC3339, jsontree.Str(m, "time"))
		if err != nil {
			return 0
		}
		return t.Unix()
	}
	slices.SortFunc(entries, func(a, b any) int {
		p, _ := a.(map[string]any)
		q, _ := b.(map[string]any)
		return cmp.Or(
			cmp.Compare(jsontree.Str(p, "operation"), jsontree.Str(q, "operation")),
			cmp.Compare(seconds(p), seconds(q)),
			cmp.Compare(jsontree.Str(p, "manager"), jsontree.Str(q, "manager")),
			cmp.Compare(jsontree.Str(p, "apiVersion"), jsontree.Str(q, "apiVersion")),
			cmp.Compare(jsontree.Str(p, "subresource"), jsontree.Str(q, "subresource")),
		)
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
