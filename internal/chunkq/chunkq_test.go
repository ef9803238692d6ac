package chunkq

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// check compares q with the model, item by item, through Len, Front and Each.
func check(t testing.TB, q *Queue[int], model []int) {
	t.Helper()
	if q.Len() != len(model) {
		t.Fatalf("Len %d, model %d", q.Len(), len(model))
	}
	var got []int
	q.Each(func(v *int) bool { got = append(got, *v); return true })
	if !slices.Equal(got, model) {
		t.Fatalf("Each %v, model %v", got, model)
	}
	if f := q.Front(); (f == nil) != (len(model) == 0) || (f != nil && *f != model[0]) {
		t.Fatalf("Front %v, model %v", f, model)
	}
}

func TestTranscripts(t *testing.T) {
	tests := []struct {
		name string
		ops  []int // n > 0 pushes n items, n < 0 pops -n items
	}{
		{"empty", nil},
		{"one", []int{1, -1}},
		{"within a chunk", []int{5, -2, 3, -6}},
		{"exactly a chunk", []int{chunkSize, -chunkSize, chunkSize, -chunkSize}},
		{"chunk boundary, drained to empty", []int{chunkSize + 1, -(chunkSize + 1), 1, -1}},
		{"hover around a boundary", []int{chunkSize - 1, 2, -2, 2, -2, 2, -(chunkSize + 1)}},
		{"many chunks", []int{10*chunkSize + 7, -(3*chunkSize + 2), 4 * chunkSize, -(11*chunkSize + 5)}},
		{"pop more than there is", []int{3, -5, 2, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue[int]
			var model []int
			next := 0
			for _, op := range tt.ops {
				for ; op > 0; op-- {
					q.Push(next)
					model = append(model, next)
					next++
				}
				for ; op < 0; op++ {
					v, ok := q.Pop()
					if ok != (len(model) > 0) {
						t.Fatalf("Pop ok=%v with %d in the model", ok, len(model))
					}
					if ok {
						if v != model[0] {
							t.Fatalf("Pop %d, model %d", v, model[0])
						}
						model = model[1:]
					}
				}
				check(t, &q, model)
			}
			q.Clear()
			check(t, &q, nil)
		})
	}
}

// Each stops when fn returns false.
func TestEachStops(t *testing.T) {
	var q Queue[int]
	for i := range 3 * chunkSize {
		q.Push(i)
	}
	n := 0
	q.Each(func(*int) bool { n++; return n < chunkSize+5 })
	if n != chunkSize+5 {
		t.Fatalf("Each called fn %d times, want %d", n, chunkSize+5)
	}
}

// Pop zeroes the slot it empties: the queue keeps no reference to what left.
func TestPopForgets(t *testing.T) {
	var q Queue[*int]
	for range chunkSize / 2 {
		q.Push(new(int))
	}
	head := q.head
	for range chunkSize / 2 {
		q.Pop()
	}
	for i, p := range head.items {
		if p != nil {
			t.Fatalf("slot %d still holds a pointer after Pop", i)
		}
	}
}

// A backlog that builds up and drains over and over allocates at most one
// chunk per chunkSize items pushed, and none once it hovers within the
// chunks and the spares it keeps.
func TestAllocations(t *testing.T) {
	var q Queue[[8]int64]
	burst := func() {
		for range 10 * chunkSize {
			q.Push([8]int64{})
		}
		for range 10 * chunkSize {
			q.Pop()
		}
	}
	burst()
	if a := testing.AllocsPerRun(20, burst); a > 10 {
		t.Errorf("a burst of 10 chunks of items allocated %v times, want at most 10", a)
	}
	hover := func() {
		for range chunkSize + chunkSize/2 {
			q.Push([8]int64{})
		}
		for range chunkSize + chunkSize/2 {
			q.Pop()
		}
	}
	hover()
	if a := testing.AllocsPerRun(100, hover); a != 0 {
		t.Errorf("hovering across one chunk boundary allocated %v times, want 0", a)
	}
	small := func() { // a backlog of up to maxSpare+1 chunks, over and over
		for range (maxSpare + 1) * chunkSize {
			q.Push([8]int64{})
		}
		for range (maxSpare + 1) * chunkSize {
			q.Pop()
		}
	}
	small()
	if a := testing.AllocsPerRun(100, small); a != 0 {
		t.Errorf("a backlog of %d chunks, over and over, allocated %v times, want 0", maxSpare+1, a)
	}
	if q.spares > maxSpare {
		t.Errorf("%d spare chunks kept, want at most %d", q.spares, maxSpare)
	}
}

// FuzzQueueMatchesSlice drives pushes and pops from the fuzzer's bytes and
// compares the queue with a slice after each step.
func FuzzQueueMatchesSlice(f *testing.F) {
	f.Add([]byte{0x7f, 0x80, 0xff, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0x00, 0x10})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var q Queue[int]
		var model []int
		next := 0
		for _, op := range ops {
			n := int(op & 0x7f)
			if op&0x80 == 0 {
				for range n * 3 { // up to 381 items: crosses chunks
					q.Push(next)
					model = append(model, next)
					next++
				}
			} else {
				for range n * 3 {
					v, ok := q.Pop()
					if ok != (len(model) > 0) || (ok && v != model[0]) {
						t.Fatalf("Pop = %d, %v; model %v", v, ok, model[:min(len(model), 3)])
					}
					if ok {
						model = model[1:]
					}
				}
			}
			check(t, &q, model)
		}
	})
}

func BenchmarkPushPop(b *testing.B) {
	for _, backlog := range []int{0, 10 * chunkSize} {
		b.Run("backlog="+map[int]string{0: "0", 10 * chunkSize: "10chunks"}[backlog], func(b *testing.B) {
			var q Queue[[8]int64]
			for range backlog {
				q.Push([8]int64{})
			}
			b.ReportAllocs()
			for range b.N {
				q.Push([8]int64{})
				q.Pop()
			}
		})
	}
}
