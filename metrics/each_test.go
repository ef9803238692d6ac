package metrics

import (
	"maps"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/workqueue"
)

// TestEach: the providers hand a live view each registered stage's
// snapshot, and forget the unregistered ones.
func TestEach(t *testing.T) {
	c, err := NewController(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewWorkqueue(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b", "c"} {
		_ = c.Register(name, func(s *controller.Stats) { s.Success = uint64(i + 1) })
		_ = q.Register(name, func(s *workqueue.Stats) { s.Adds = uint64(10 * (i + 1)) })
	}
	c.Unregister("b")
	q.Unregister("c")
	got := map[string]uint64{}
	c.Each(func(name string, s *controller.Stats) { got[name] = s.Success })
	if want := map[string]uint64{"a": 1, "c": 3}; !maps.Equal(got, want) {
		t.Errorf("Controller.Each: %v, want %v", got, want)
	}
	clear(got)
	q.Each(func(name string, s *workqueue.Stats) { got[name] = s.Adds })
	if want := map[string]uint64{"a": 10, "b": 20}; !maps.Equal(got, want) {
		t.Errorf("Workqueue.Each: %v, want %v (names %v)", got, want, slices.Sorted(maps.Keys(got)))
	}
}
