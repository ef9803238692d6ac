package cache

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// checkTable verifies a table's counts and that every item is found by its
// key from its probe start.
func checkTable[T Object](t *testing.T, tab *table[T]) {
	t.Helper()
	a := tab.arr.Load()
	used, live := 0, 0
	for i := range a.s {
		it := a.s[i].Load()
		switch {
		case it == nil:
		case it == a.tomb:
			used++
		default:
			used++
			live++
			if got := tab.get(it.key); got != it {
				t.Fatalf("slot %d: get(%q) = %p, want the slot's item %p", i, it.key, got, it)
			}
			if it.e == nil || it.e.key != it.key {
				t.Fatalf("slot %d: item %q has entry %+v", i, it.key, it.e)
			}
		}
	}
	if used != tab.used || live != tab.live || used >= len(a.s) {
		t.Fatalf("table counts used %d live %d, slots hold %d and %d of %d", tab.used, tab.live, used, live, len(a.s))
	}
}

// TestTableModel drives a table with random puts and deletes against a map.
func TestTableModel(t *testing.T) {
	for _, keys := range []int{1, 7, 100, 3000} {
		t.Run(fmt.Sprint(keys), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(keys), 1))
			tab := newTable[*corev1.Pod](0, maphash.MakeSeed())
			model := map[string]*corev1.Pod{}
			for step := range 20 * keys {
				key := fmt.Sprintf("ns/p%d", r.IntN(keys))
				if r.IntN(3) == 0 {
					tab.del(tab.hashString(key), key)
					delete(model, key)
				} else {
					p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: key[3:], ResourceVersion: fmt.Sprint(step)}}
					tab.put(tab.hashString(key), &entry[*corev1.Pod]{key: key, obj: p}, p)
					model[key] = p
				}
				if step%97 == 0 || step == 20*keys-1 {
					checkTable(t, tab)
					if tab.live != len(model) {
						t.Fatalf("step %d: %d live, model %d", step, tab.live, len(model))
					}
					for k, p := range model {
						if it := tab.get(k); it == nil || it.obj() != p {
							t.Fatalf("step %d: get(%q) = %+v, want %s", step, k, it, p.ResourceVersion)
						}
						if it := tab.getBytes([]byte(k)); it == nil || it.obj() != p {
							t.Fatalf("step %d: getBytes(%q) = %+v", step, k, it)
						}
					}
					if tab.get("ns/absent") != nil || tab.get("") != nil || tab.getBytes(nil) != nil {
						t.Fatalf("step %d: found an absent key", step)
					}
				}
			}
			// Everything deleted: the array shrinks back.
			for k := range model {
				tab.del(tab.hashString(k), k)
			}
			checkTable(t, tab)
			if n := len(tab.arr.Load().s); tab.live != 0 || n > 64 {
				t.Fatalf("emptied table: %d live, %d slots", tab.live, n)
			}
		})
	}
}

// TestGetWhileWriting: readers never see a key that is stored throughout
// as missing, nor an object of another key, while a writer updates, adds
// and deletes other keys and the table grows and shrinks (go test -race).
func TestGetWhileWriting(t *testing.T) {
	ix, err := New(Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string, rv int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: fmt.Sprint(rv)}}
	}
	const stable = 50
	for i := range stable {
		if err := ix.Add(pod(fmt.Sprintf("stable-%d", i), 0)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				name := fmt.Sprintf("stable-%d", i%stable)
				p, ok := ix.Get("ns", name)
				if !ok || p.Name != name {
					t.Errorf("Get(%s) = %v, %v", name, p, ok)
					return
				}
				if p, ok := ix.GetByKey("ns/" + name); !ok || p.Name != name {
					t.Errorf("GetByKey(%s) = %v, %v", name, p, ok)
					return
				}
			}
		})
	}
	for round := range 30 {
		for i := range 200 {
			if err := ix.Add(pod(fmt.Sprintf("churn-%d", i), round)); err != nil {
				t.Fatal(err)
			}
			if err := ix.Update(pod(fmt.Sprintf("stable-%d", i%stable), round)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 200 {
			if err := ix.Delete(pod(fmt.Sprintf("churn-%d", i), round)); err != nil {
				t.Fatal(err)
			}
		}
		if round%10 == 0 {
			objs := ix.List()
			if err := ix.Replace(objs, fmt.Sprint(round)); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
	checkInvariants(t, ix)
}

// An update replaces the object in its item, in place and without an
// allocation, while the object keeps its dynamic type; an object of another
// type (an Indexer of an interface holding typed and unstructured objects)
// gets a new item. Either way readers see the newest object.
func TestUpdateInPlace(t *testing.T) {
	ix, err := New[Object](Options[Object]{})
	if err != nil {
		t.Fatal(err)
	}
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}}
	if err := ix.Add(a); err != nil {
		t.Fatal(err)
	}
	first := ix.items.Load().get("ns/a")
	b := a.DeepCopy()
	b.ResourceVersion = "2"
	if err := ix.Update(b); err != nil {
		t.Fatal(err)
	}
	if it := ix.items.Load().get("ns/a"); it != first || it.obj() != Object(b) {
		t.Fatalf("same type: item %p (was %p), object %v", it, first, it.obj())
	}
	objs := []Object{a, b}
	if allocs := testing.AllocsPerRun(100, func() {
		objs[0], objs[1] = objs[1], objs[0]
		if err := ix.Update(objs[0]); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("an update of the same type allocated %v times", allocs)
	}
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName("a")
	u.SetResourceVersion("3")
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	if err := ix.Update(u); err != nil {
		t.Fatal(err)
	}
	if it := ix.items.Load().get("ns/a"); it == first || it.obj() != Object(u) {
		t.Fatalf("another type: item %p (was %p), object %T", it, first, it.obj())
	}
	if got, ok := ix.Get("ns", "a"); !ok || got != Object(u) {
		t.Fatalf("Get = %T, %v", got, ok)
	}
	checkTable(t, ix.items.Load())
}
