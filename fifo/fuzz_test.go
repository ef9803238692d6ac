package fifo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
)

// model is a deliberately simple reference FIFO: a slice of units, with
// Replace and Resync computed from first principles.
type model struct {
	units [][]Delta[obj]
	// inflight is the unit being processed, which Replace and Resync treat
	// as queued (before every queued unit).
	inflight          []Delta[obj]
	populated         bool
	initialPopulation int
	synced            bool
}

func (m *model) queued() int {
	n := 0
	for _, u := range m.units {
		n += len(u)
	}
	return n
}

// last returns the last queued delta of each key.
func (m *model) last() map[string]Delta[obj] {
	out := map[string]Delta[obj]{}
	for _, u := range m.pending() {
		for _, d := range u {
			if d.Type != Bookmark {
				out[d.Key] = d
			}
		}
	}
	return out
}

func (m *model) firstSeenKeys() []string {
	var keys []string
	for _, u := range m.pending() {
		for _, d := range u {
			if d.Type != Bookmark && !slices.Contains(keys, d.Key) {
				keys = append(keys, d.Key)
			}
		}
	}
	return keys
}

// pending returns the unit in flight, if any, then the queued ones.
func (m *model) pending() [][]Delta[obj] {
	if m.inflight == nil {
		return m.units
	}
	return append([][]Delta[obj]{m.inflight}, m.units...)
}

func (m *model) checkSynced() {
	if m.populated && m.initialPopulation == 0 {
		m.synced = true
	}
}

func (m *model) push(d Delta[obj]) {
	if d.Type != Bookmark {
		m.populated = true
		m.checkSynced()
	}
	m.units = append(m.units, []Delta[obj]{d})
}

func (m *model) replace(list []obj, rv string, known *store) {
	var batch []Delta[obj]
	listed := map[string]bool{}
	for _, o := range list {
		k, _ := defaultKey(o)
		listed[k] = true
		batch = append(batch, Delta[obj]{Type: Replaced, Object: o, Key: k, ResourceVersion: rv})
	}
	last := m.last()
	for _, k := range m.firstSeenKeys() {
		if !listed[k] && last[k].Type != Deleted {
			batch = append(batch, Delta[obj]{Type: Deleted, Object: last[k].Object, Key: k, ResourceVersion: rv, FinalStateUnknown: true})
		}
	}
	for _, k := range known.ListKeys() {
		if _, queued := last[k]; !listed[k] && !queued {
			o, _ := known.GetByKey(k)
			batch = append(batch, Delta[obj]{Type: Deleted, Object: o, Key: k, ResourceVersion: rv, FinalStateUnknown: true})
		}
	}
	if len(batch) > 0 {
		m.units = append(m.units, batch)
	}
	if !m.populated {
		m.populated = true
		m.initialPopulation = m.queued()
	}
	m.checkSynced()
}

func (m *model) resync(known *store) {
	last := m.last()
	for _, k := range known.ListKeys() {
		if _, queued := last[k]; !queued {
			o, _ := known.GetByKey(k)
			m.units = append(m.units, []Delta[obj]{{Type: Sync, Object: o, Key: k}})
		}
	}
}

// isReplace reports whether a unit is a Replace batch, by the rule Pop
// documents for consumers: its first delta is Replaced or a Deleted with
// FinalStateUnknown.
func isReplace(u []Delta[obj]) bool {
	return u[0].Type == Replaced || u[0].FinalStateUnknown
}

// pop takes the next unit: a Replace batch alone, or a run of up to maxRun
// single deltas.
func (m *model) pop(maxRun int) []Delta[obj] {
	u := m.units[0]
	m.units = m.units[1:]
	if isReplace(u) {
		return u
	}
	run := slices.Clone(u)
	for len(run) < maxRun && len(m.units) > 0 && !isReplace(m.units[0]) {
		run = append(run, m.units[0]...)
		m.units = m.units[1:]
	}
	return run
}

// popped ends the processing of a unit of which initial deltas were
// counted by the initial population when it was popped.
func (m *model) popped(initial int) {
	m.initialPopulation -= initial
	m.checkSynced()
}

var fuzzKeys = []string{"a/x", "a/y", "b/x", "b/z", "node-1", "node-2"}

// FuzzFIFO drives a FIFO and the reference model with the same random
// operations and checks that every popped unit is identical (order kept,
// nothing lost, Replace delivered as one batch), that HasSynced agrees, and
// that after a Replace and a full drain the consumer's store holds exactly
// the listed objects (a relist leaves no stale object behind).
func FuzzFIFO(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{3, 0xff, 6, 0, 7, 3, 0x05, 6, 6, 6, 1, 2, 4, 5})
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 0x2a, 5, 6, 6, 3, 0, 6, 6, 6, 6})
	f.Add([]byte{0xc0, 1, 9, 4, 2, 3, 0x01, 1, 3, 0x03, 5, 0, 6, 1, 4, 6, 6, 5, 6, 6, 6})
	f.Add([]byte{0x80, 3, 0x07, 0, 1, 3, 0x01, 6, 1, 2, 6, 6, 6})
	// Op 7: a Replace, Resync or Bookmark while a unit is in flight.
	f.Add([]byte{0xc0, 4, 4, 7, 0x1c, 6, 0, 1, 7, 0x01, 5, 0x0c, 7, 0x02, 6, 6})
	f.Add([]byte{0x40, 5, 8, 0x10, 7, 0x00, 7, 0x04, 6, 6, 6})
	f.Add([]byte{0xc4, 4, 4, 7, 0x04, 6, 6}) // the first Replace while Bookmarks are in flight
	f.Fuzz(runFuzzBody)
}

func runFuzzBody(t *testing.T, ops []byte) {
	known := newStore()
	maxRun := 1 // the first byte also picks MaxRun, 1 to 4
	if len(ops) > 0 {
		maxRun = 1 + int(ops[0]>>6)
	}
	fifo, err := New(Options[obj]{KnownObjects: known, MaxRun: maxRun})
	if err != nil {
		t.Fatal(err)
	}
	var m model
	rv := 0
	var lastList map[string]obj // the last Replace's objects, while no push followed it
	check := func(want, got []Delta[obj]) {
		t.Helper()
		if len(want) != len(got) {
			t.Fatalf("popped %d deltas, want %d:\n got %s\nwant %s", len(got), len(want), renderBatch(got), renderBatch(want))
		}
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("delta %d:\n got %s\nwant %s", i, renderBatch(got), renderBatch(want))
			}
		}
	}
	// popOne pops a unit; during its processing, before the consumer
	// applies it, it calls during (if not nil).
	popOne := func(during func()) {
		want := m.pop(maxRun)
		initial := min(len(want), m.initialPopulation)
		m.inflight = want
		err := fifo.Pop(context.Background(), func(got []Delta[obj]) error {
			check(want, got)
			if during != nil {
				during()
				if got, want := fifo.HasSynced(), m.synced; got != want {
					t.Fatalf("while a unit is in flight: HasSynced = %v, model %v", got, want)
				}
			}
			known.apply(got)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		m.inflight = nil
		m.popped(initial)
	}
	// replace queues a relist of the keys selected by mask, to the FIFO and
	// the model.
	replace := func(mask byte) {
		var list []obj
		lastList = map[string]obj{}
		for j, k := range fuzzKeys {
			if mask&(1<<j) != 0 {
				lo := mk(k, strconv.Itoa(rv))
				list = append(list, lo)
				lastList[k] = lo
			}
		}
		must(t, fifo.Replace(list, strconv.Itoa(rv)))
		m.replace(list, strconv.Itoa(rv), known)
	}
	for i := 0; i < len(ops); i++ {
		op := ops[i] % 8
		rv++
		key := fuzzKeys[int(ops[i]/8)%len(fuzzKeys)]
		o := mk(key, strconv.Itoa(rv))
		switch op {
		case 0:
			must(t, fifo.Add(o))
			m.push(Delta[obj]{Type: Added, Object: o, Key: key})
			lastList = nil
		case 1:
			must(t, fifo.Update(o))
			m.push(Delta[obj]{Type: Updated, Object: o, Key: key})
			lastList = nil
		case 2:
			must(t, fifo.Delete(o))
			m.push(Delta[obj]{Type: Deleted, Object: o, Key: key})
			lastList = nil
		case 3: // Replace with the keys selected by the next byte
			var mask byte
			if i+1 < len(ops) {
				i++
				mask = ops[i]
			}
			replace(mask)
		case 4:
			must(t, fifo.Bookmark(strconv.Itoa(rv)))
			m.push(Delta[obj]{Type: Bookmark, ResourceVersion: strconv.Itoa(rv)})
		case 5:
			must(t, fifo.Resync())
			m.resync(known)
		case 6:
			if len(m.units) > 0 {
				popOne(nil)
			}
		case 7: // pop; while the unit is in flight, the next byte's
			// low 2 bits pick a Replace (of the keys in its high 6 bits), a
			// Resync or a Bookmark
			if len(m.units) == 0 {
				break
			}
			var next byte
			if i+1 < len(ops) {
				i++
				next = ops[i]
			}
			popOne(func() {
				switch next % 4 {
				case 0, 1:
					replace(next >> 2)
				case 2:
					must(t, fifo.Resync())
					m.resync(known)
				case 3:
					must(t, fifo.Bookmark(strconv.Itoa(rv)))
					m.push(Delta[obj]{Type: Bookmark, ResourceVersion: strconv.Itoa(rv)})
				}
			})
		}
		if got, want := fifo.Len(), m.queued(); got != want {
			t.Fatalf("after op %d: Len = %d, model %d", op, got, want)
		}
		if got, want := fifo.HasSynced(), m.synced; got != want {
			t.Fatalf("after op %d: HasSynced = %v, model %v", op, got, want)
		}
	}
	for len(m.units) > 0 {
		popOne(nil)
	}
	if fifo.Len() != 0 {
		t.Fatalf("FIFO holds %d deltas the model does not", fifo.Len())
	}
	if lastList != nil {
		got := map[string]obj{}
		for _, k := range known.ListKeys() {
			got[k], _ = known.GetByKey(k)
		}
		if !maps.Equal(got, lastList) {
			t.Fatalf("after a relist and a drain the store is %s, want exactly the list %v", known, fmt.Sprint(slices.Sorted(maps.Keys(lastList))))
		}
	}
	fifo.Close()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
