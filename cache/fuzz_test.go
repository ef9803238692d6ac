package cache

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzIndexer applies random Add/Update/Swap/Delete/LoadAndDelete/Replace/
// AddIndexers operations to an Indexer and to a plain map, and checks after
// each one that the content, every index bucket and the internal structure
// agree with the map.
func FuzzIndexer(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{0, 0x10, 0x21, 0x32, 5, 0xff, 6, 0x43, 2, 7, 0x13, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		ix, err := New(Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"label": byLabel}})
		if err != nil {
			t.Fatal(err)
		}
		names := []string{"a", "b", "c", "d"}
		namespaces := []string{"", "x", "y"}
		labels := []string{"app=web", "app=db", "tier=front"}
		model := map[string]*corev1.Pod{}
		addedApp := false
		mkPod := func(b byte, rv int) *corev1.Pod {
			var ls []string
			for i, l := range labels {
				if b&(1<<(i+2)) != 0 {
					ls = append(ls, l)
				}
			}
			return pod(namespaces[int(b)%len(namespaces)], names[int(b>>5)%len(names)], fmt.Sprint(rv), ls...)
		}
		for i := 0; i < len(ops); i++ {
			op, arg := ops[i]%8, byte(0)
			if i+1 < len(ops) {
				i++
				arg = ops[i]
			}
			p := mkPod(arg, i)
			key := Key(p)
			switch op {
			case 0:
				must(t, ix.Add(p))
				model[key] = p
			case 1:
				must(t, ix.Update(p))
				model[key] = p
			case 2:
				old, replaced, err := ix.Swap(p)
				must(t, err)
				if want, ok := model[key]; ok != replaced || old != want {
					t.Fatalf("Swap(%s) = %v, %v; model has %v", key, old, replaced, want)
				}
				model[key] = p
			case 3:
				must(t, ix.Delete(p))
				delete(model, key)
			case 4:
				old, deleted, err := ix.LoadAndDelete(key)
				must(t, err)
				if want, ok := model[key]; ok != deleted || old != want {
					t.Fatalf("LoadAndDelete(%s) = %v, %v; model has %v", key, old, deleted, want)
				}
				delete(model, key)
			case 5:
				var list []*corev1.Pod
				model = map[string]*corev1.Pod{}
				for j := range int(arg % 6) {
					lp := mkPod(arg*byte(j+7), i*10+j)
					list = append(list, lp)
					model[Key(lp)] = lp
				}
				must(t, ix.Replace(list, fmt.Sprint(i)))
			case 6:
				if !addedApp {
					must(t, ix.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"app": byApp}))
					addedApp = true
				}
			default:
				got, ok := ix.Get(p.Namespace, p.Name)
				if want, wok := model[key]; ok != wok || got != want {
					t.Fatalf("Get(%s) = %v, %v; model has %v", key, got, ok, want)
				}
			}
			checkInvariants(t, ix)
			if ix.Len() != len(model) {
				t.Fatalf("Len = %d, model %d", ix.Len(), len(model))
			}
			got := map[string]*corev1.Pod{}
			for _, o := range ix.List() {
				got[Key(o)] = o
			}
			if !maps.Equal(got, model) {
				t.Fatalf("List differs from the model")
			}
			for _, ns := range namespaces {
				var want []string
				for k, o := range model {
					if o.Namespace == ns {
						want = append(want, k)
					}
				}
				keys, err := ix.IndexKeys(NamespaceIndex, ns)
				must(t, err)
				slices.Sort(keys)
				slices.Sort(want)
				if !slices.Equal(keys, want) {
					t.Fatalf("namespace %q: %v, model %v", ns, keys, want)
				}
			}
			for _, l := range labels {
				var want []string
				for k, o := range model {
					if lk, lv, _ := strings.Cut(l, "="); o.Labels[lk] == lv {
						want = append(want, k)
					}
				}
				keys, err := ix.IndexKeys("label", l)
				must(t, err)
				slices.Sort(keys)
				slices.Sort(want)
				if !slices.Equal(keys, want) {
					t.Fatalf("label %q: %v, model %v", l, keys, want)
				}
			}
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
