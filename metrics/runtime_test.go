package metrics

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

func TestRegisterRuntime(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	got, err := RegisterRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("registered %d collectors, want 2", len(got))
	}
	want := []string{"go_goroutines", "go_memstats_alloc_bytes", "go_gc_duration_seconds", "go_sched_gomaxprocs_threads"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds")
	}
	names := gathered(t, reg)
	for _, n := range want {
		if !names[n] {
			t.Errorf("%s not gathered", n)
		}
	}

	// Again on the same registry: nothing new, no error.
	again, err := RegisterRuntime(reg)
	if err != nil || len(again) != 0 {
		t.Fatalf("second RegisterRuntime: %d collectors, %v; want none, nil", len(again), err)
	}
	// A registry that has only the process collector gets the Go one.
	part := prometheus.NewRegistry()
	part.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if got, err := RegisterRuntime(part); err != nil || len(got) != 1 {
		t.Fatalf("RegisterRuntime on a registry with a process collector: %d collectors, %v; want 1, nil", len(got), err)
	}
	// Unregistering what it returned leaves nothing of it.
	for _, c := range got {
		reg.Unregister(c)
	}
	if n := gathered(t, reg); len(n) != 0 {
		t.Fatalf("after Unregister, still gathered: %v", n)
	}
	// The default registry has its own: left alone.
	if got, err := RegisterRuntime(prometheus.DefaultRegisterer); err != nil || len(got) != 0 {
		t.Fatalf("RegisterRuntime(DefaultRegisterer): %d collectors, %v; want none, nil", len(got), err)
	}
	if _, err := RegisterRuntime(nil); err == nil {
		t.Fatal("nil registerer accepted")
	}
}

func gathered(t *testing.T, g prometheus.Gatherer) map[string]bool {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	return names
}
