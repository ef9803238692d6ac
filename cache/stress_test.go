package cache

import (
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGetLinearizable: lock-free Get and GetByKey against one writer that
// runs Add, Update, Swap, Delete, LoadAndDelete, Replace and ReplaceFrom
// (go test -race). Every write gives its object a version higher than any
// before, and records it as committed once the write has returned. A read
// must return an object of the key asked for (never another key's), whose
// version is at least the one committed before the read began (never an
// object older than a completed write), never a version not yet written,
// and versions a reader sees of one key never go back (a key deleted and
// added again comes back at a higher version). Stable keys are never
// deleted, so a read of one never misses; churn keys come and go.
func TestGetLinearizable(t *testing.T) {
	tests := []struct {
		name            string
		stable, churn   int
		rounds, readers int
		opts            Options[*corev1.Pod]
	}{
		{name: "small table", stable: 3, churn: 5, rounds: 400, readers: 2},
		{name: "grows and shrinks", stable: 40, churn: 400, rounds: 12, readers: 3},
		{name: "with indexes", stable: 20, churn: 60, rounds: 40, readers: 2,
			opts: Options[*corev1.Pod]{Indexers: map[string]IndexFunc[*corev1.Pod]{"app": byApp}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			n := tt.stable + tt.churn
			keyName := func(i int) string {
				if i < tt.stable {
					return "stable-" + strconv.Itoa(i)
				}
				return "churn-" + strconv.Itoa(i)
			}
			// committed[i]: the version of key i's last completed write
			// (0: none yet); written stores the highest version handed out.
			committed := make([]atomic.Int64, n)
			var written atomic.Int64
			mk := func(i int) *corev1.Pod {
				v := written.Add(1)
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
					Namespace: "ns", Name: keyName(i), ResourceVersion: strconv.FormatInt(v, 10),
					Labels: map[string]string{"app": []string{"web", "db"}[v%2]},
				}}
			}
			version := func(p *corev1.Pod) int64 {
				v, err := strconv.ParseInt(p.ResourceVersion, 10, 64)
				if err != nil {
					t.Errorf("bad version %q", p.ResourceVersion)
				}
				return v
			}
			cur := make([]*corev1.Pod, n) // writer's model: nil = absent
			for i := range tt.stable {
				cur[i] = mk(i)
				if err := ix.Add(cur[i]); err != nil {
					t.Fatal(err)
				}
				committed[i].Store(version(cur[i]))
			}

			done := make(chan struct{})
			var wg sync.WaitGroup
			var reads atomic.Int64
			for r := range tt.readers {
				wg.Go(func() {
					seen := make([]int64, n)
					for j := r; ; j++ {
						select {
						case <-done:
							return
						default:
						}
						i := j % n
						name := keyName(i)
						floor := committed[i].Load()
						var p *corev1.Pod
						var ok bool
						if j%2 == 0 {
							p, ok = ix.Get("ns", name)
						} else {
							p, ok = ix.GetByKey("ns/" + name)
						}
						ceil := written.Load()
						reads.Add(1)
						if !ok {
							if i < tt.stable {
								t.Errorf("stable key %s missing", name)
								return
							}
							continue
						}
						v := version(p)
						switch {
						case p.Namespace != "ns" || p.Name != name:
							t.Errorf("read of %s returned %s", name, Key(p))
							return
						case v < floor:
							t.Errorf("read of %s: version %d older than committed %d", name, v, floor)
							return
						case v > ceil:
							t.Errorf("read of %s: version %d never written (highest %d)", name, v, ceil)
							return
						case v < seen[i]:
							t.Errorf("reads of %s went back from version %d to %d", name, seen[i], v)
							return
						}
						seen[i] = v
					}
				})
			}

			// One writer: its model is the truth, so Replace loses no write.
			snapshot := func() []*corev1.Pod {
				var objs []*corev1.Pod
				for _, p := range cur {
					if p != nil {
						objs = append(objs, p)
					}
				}
				return objs
			}
			commitAll := func() {
				for i, p := range cur {
					if p != nil {
						committed[i].Store(version(p))
					}
				}
			}
			for round := range tt.rounds {
				for i := range n {
					var err error
					switch (round + i) % 7 {
					case 0, 1:
						cur[i] = mk(i)
						err = ix.Add(cur[i])
					case 2:
						cur[i] = mk(i)
						err = ix.Update(cur[i])
					case 3:
						cur[i] = mk(i)
						_, _, err = ix.Swap(cur[i])
					case 4, 5:
						if i >= tt.stable && cur[i] != nil {
							err = ix.Delete(cur[i])
							cur[i] = nil
						}
					case 6:
						if i >= tt.stable && cur[i] != nil {
							_, _, err = ix.LoadAndDelete("ns/" + keyName(i))
							cur[i] = nil
						}
					}
					if err != nil {
						t.Fatal(err)
					}
					if cur[i] != nil {
						committed[i].Store(version(cur[i]))
					}
				}
				switch round % 5 {
				case 1: // everything at a new version
					for i := range n {
						if cur[i] != nil {
							cur[i] = mk(i)
						}
					}
					if err := ix.Replace(snapshot(), fmt.Sprint(round)); err != nil {
						t.Fatal(err)
					}
					commitAll()
				case 3: // half the churn keys gone, the other half back
					for i := tt.stable; i < n; i++ {
						if (i+round)%2 == 0 {
							cur[i] = nil
						} else {
							cur[i] = mk(i)
						}
					}
					for i := range tt.stable {
						cur[i] = mk(i)
					}
					if err := replaceFrom(ix, snapshot(), fmt.Sprint(round)); err != nil {
						t.Fatal(err)
					}
					commitAll()
				}
			}
			close(done)
			wg.Wait()
			if reads.Load() == 0 {
				t.Fatal("no read ran")
			}
			checkInvariants(t, ix)
			for i, p := range cur {
				got, ok := ix.GetByKey("ns/" + keyName(i))
				if ok != (p != nil) || (ok && got != p) {
					t.Fatalf("after the writes: GetByKey(%s) = %v, %v; want %v", keyName(i), got, ok, p)
				}
			}
		})
	}
}

// TestTableChurnSize: under churn the table keeps every live key, its
// tombstones never fill it (every probe ends), it shrinks when most of it is
// empty and does not grow while the number of live keys stays the same.
func TestTableChurnSize(t *testing.T) {
	tests := []struct {
		name       string
		live       int // keys kept live while churning
		churn      int // inserts (each followed by a delete of the oldest)
		maxSlots   int // the array never exceeds this during the churn
		afterEmpty int // slots once every key is deleted
	}{
		{name: "one key", live: 1, churn: 1000, maxSlots: 8, afterEmpty: minTable},
		{name: "five keys in the smallest array", live: 5, churn: 1000, maxSlots: 16, afterEmpty: minTable},
		{name: "hundred keys", live: 100, churn: 5000, maxSlots: 512, afterEmpty: minTable},
		{name: "thousand keys", live: 1000, churn: 5000, maxSlots: 4096, afterEmpty: minTable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := newTable[*corev1.Pod](0, maphash.MakeSeed())
			put := func(k int) {
				key := "ns/k" + strconv.Itoa(k)
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: key[3:]}}
				tab.put(tab.hashString(key), &entry[*corev1.Pod]{key: key, obj: p}, p)
			}
			del := func(k int) {
				key := "ns/k" + strconv.Itoa(k)
				tab.del(tab.hashString(key), key)
			}
			for k := range tt.live {
				put(k)
			}
			checkTable(t, tab)
			for k := tt.live; k < tt.live+tt.churn; k++ {
				put(k)
				del(k - tt.live)
				a := tab.arr.Load()
				if n := len(a.s); n > tt.maxSlots {
					t.Fatalf("after %d churns: %d slots for %d live keys", k-tt.live+1, n, tab.live)
				}
				if tab.used >= len(a.s)*3/4+1 || tab.live != tt.live {
					t.Fatalf("after %d churns: used %d live %d of %d slots", k-tt.live+1, tab.used, tab.live, len(a.s))
				}
			}
			checkTable(t, tab)
			for k := tt.churn; k < tt.churn+tt.live; k++ {
				key := "ns/k" + strconv.Itoa(k)
				if it := tab.get(key); it == nil || it.key != key {
					t.Fatalf("live key %s: %v", key, it)
				}
				if it := tab.get("ns/k" + strconv.Itoa(k-tt.live)); it != nil && k-tt.live < tt.churn {
					t.Fatalf("deleted key found: %s", it.key)
				}
			}
			for k := tt.churn; k < tt.churn+tt.live; k++ {
				del(k)
			}
			checkTable(t, tab)
			if n := len(tab.arr.Load().s); tab.live != 0 || n != tt.afterEmpty {
				t.Fatalf("emptied: %d live, %d slots, want %d", tab.live, n, tt.afterEmpty)
			}
		})
	}
}

// TestReplaceFromSizeHint: the size given to ReplaceFrom is only a capacity
// hint: a negative or absurdly large one neither panics nor allocates it,
// and the content is the objects sent.
func TestReplaceFromSizeHint(t *testing.T) {
	objs := []*corev1.Pod{pod("ns", "a", "1"), pod("ns", "b", "1"), pod("", "c", "1")}
	for _, size := range []int{-1, math.MinInt, 0, 1, len(objs), 1 << 40, math.MaxInt} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			ix, err := New(Options[*corev1.Pod]{})
			if err != nil {
				t.Fatal(err)
			}
			batches := make(chan []*corev1.Pod, 2)
			batches <- objs[:1]
			batches <- objs[1:]
			close(batches)
			if err := ix.ReplaceFrom(size, batches, "7"); err != nil {
				t.Fatal(err)
			}
			if ix.Len() != len(objs) || ix.LastSyncResourceVersion() != "7" {
				t.Fatalf("Len %d, resourceVersion %q", ix.Len(), ix.LastSyncResourceVersion())
			}
			for _, p := range objs {
				if got, ok := ix.GetByKey(Key(p)); !ok || got != p {
					t.Fatalf("GetByKey(%s) = %v, %v", Key(p), got, ok)
				}
			}
			limit := 64 // room for the objects sent, or for the capped hint
			if size > len(objs) {
				limit = len(newSlots[*corev1.Pod](maxSizeHint).s)
			}
			if n := len(ix.items.Load().arr.Load().s); n > limit {
				t.Fatalf("%d slots for %d objects and hint %d", n, len(objs), size)
			}
			checkInvariants(t, ix)
		})
	}
}
