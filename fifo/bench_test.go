package fifo

import (
	"context"
	"fmt"
	"testing"
)

func benchObjs(n int) []obj {
	out := make([]obj, n)
	for i := range out {
		out[i] = mk(fmt.Sprintf("team-%02d/web-%07d", i%100, i), "1")
	}
	return out
}

// BenchmarkUpdatePop: one Update and one Pop per op, in one goroutine.
func BenchmarkUpdatePop(b *testing.B) {
	f, _ := New(Options[obj]{})
	objs := benchObjs(1000)
	ctx := context.Background()
	process := func([]Delta[obj]) error { return nil }
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := f.Update(objs[i%len(objs)]); err != nil {
			b.Fatal(err)
		}
		if err := f.Pop(ctx, process); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPipeline: a producer goroutine pushes Updates while the consumer
// Pops them (the steady state of a watch), per delta, one delta per Pop
// (MaxRun 1, the default) and in runs (MaxRun 64, as the informer).
func BenchmarkPipeline(b *testing.B) {
	for _, maxRun := range []int{1, 64} {
		b.Run(fmt.Sprintf("MaxRun=%d", maxRun), func(b *testing.B) {
			f, _ := New(Options[obj]{MaxRun: maxRun})
			objs := benchObjs(1000)
			ctx := context.Background()
			popped := 0
			process := func(batch []Delta[obj]) error { popped += len(batch); return nil }
			b.ReportAllocs()
			b.ResetTimer()
			go func() {
				for i := range b.N {
					if err := f.Update(objs[i%len(objs)]); err != nil {
						panic(err)
					}
				}
			}()
			for popped < b.N {
				if err := f.Pop(ctx, process); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReplace: a relist of n objects over a consumer that knows n
// objects of which 10 % are gone, queued and popped as one batch.
func BenchmarkReplace(b *testing.B) {
	benchReplace(b, func(objs []obj) (*store, []obj) {
		return newStore(objs...), objs[:len(objs)-len(objs)/10]
	}, "2")
}

// BenchmarkReplaceInitial: the initial list, into a FIFO whose consumer
// knows nothing yet (an informer's first sync).
func BenchmarkReplaceInitial(b *testing.B) {
	benchReplace(b, func(objs []obj) (*store, []obj) { return newStore(), objs }, "1")
}

// benchReplace times Replace then Pop of the list setup makes from n
// objects, into a FIFO whose consumer knows what setup's store holds; the
// batch must hold n deltas (the listed ones and the deletions inferred).
func benchReplace(b *testing.B, setup func(objs []obj) (known *store, list []obj), rv string) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			known, list := setup(benchObjs(n))
			f, _ := New(Options[obj]{KnownObjects: known})
			ctx := context.Background()
			got := 0
			process := func(batch []Delta[obj]) error { got = len(batch); return nil }
			b.ReportAllocs()
			for b.Loop() {
				if err := f.Replace(list, rv); err != nil {
					b.Fatal(err)
				}
				if err := f.Pop(ctx, process); err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("batch of %d, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}
