package storage

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func BenchmarkCreate(b *testing.B) {
	s := newStore(b, Options{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		name := strconv.Itoa(i)
		i++
		if _, err := s.Create("cm", "ns", name, enc("ns", name, "v", nil)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	s := newStore(b, Options{})
	if _, err := s.Create("cm", "ns", "x", enc("ns", "x", "v", nil)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Update("cm", "ns", "x", set("ns", "x", "v")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatchFanOut writes 10,000 events and delivers each to 100 watchers
// that read the shared frames; one op is the whole fan-out.
func BenchmarkWatchFanOut(b *testing.B) {
	const events, watchers = 10_000, 100
	b.ReportAllocs()
	for b.Loop() {
		s := newStore(b, Options{HistoryEvents: events})
		var wg sync.WaitGroup
		for range watchers {
			w, err := s.Watch("cm", WatchOptions{})
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				n := 0
				for range events {
					ev, err := w.Next(context.Background())
					if err != nil {
						b.Error(err)
						return
					}
					n += len(ev.Frame())
				}
			})
		}
		for i := range events {
			name := strconv.Itoa(i % 100)
			var err error
			if i < 100 {
				_, err = s.Create("cm", "ns", name, enc("ns", name, "v", nil))
			} else {
				_, err = s.Update("cm", "ns", name, set("ns", name, strconv.Itoa(i)))
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
	}
	b.ReportMetric(float64(events*watchers)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkCreateParallel creates objects from 32 goroutines, in memory
// and with a data directory, where each create returns once an fdatasync
// covers it (one fdatasync for all the creates waiting with it).
func BenchmarkCreateParallel(b *testing.B) {
	for _, name := range []string{"memory", "datadir"} {
		b.Run(name, func(b *testing.B) {
			var opts Options
			if name == "datadir" {
				opts.Dir = b.TempDir()
			}
			s := newStore(b, opts)
			b.Cleanup(func() { _ = s.Close() })
			var n atomic.Int64
			b.SetParallelism(max(32/runtime.GOMAXPROCS(0), 1))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					name := strconv.FormatInt(n.Add(1), 10)
					if _, err := s.Create("cm", "ns", name, enc("ns", name, "v", nil)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
	}
}

// BenchmarkOpen opens a data directory holding 20,000 objects of 1 KiB,
// written once each and updated once: from the log alone, and from a
// snapshot (the log then starts after it).
func BenchmarkOpen(b *testing.B) {
	const objects = 20_000
	value := strings.Repeat("x", 1<<10)
	for _, snapshot := range []bool{false, true} {
		name := "log"
		if snapshot {
			name = "snapshot"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			s := newStore(b, Options{Dir: dir, HistoryEvents: objects})
			var wg sync.WaitGroup
			for g := range 32 { // writers sharing fdatasyncs
				wg.Go(func() {
					for i := g; i < objects; i += 32 {
						name := strconv.Itoa(i)
						if _, err := s.Create("cm", "ns", name, enc("ns", name, value, nil)); err != nil {
							b.Error(err)
							return
						}
						if _, err := s.Update("cm", "ns", name, set("ns", name, value)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if snapshot {
				if err := s.snapshot(); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				s, err := New(Options{Dir: dir, HistoryEvents: objects})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
