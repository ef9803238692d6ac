package informer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// at returns a copy of p at resourceVersion rv.
func at(p *corev1.Pod, rv string) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = rv
	return p
}

// feed is the reflector's side of the informer's FIFO.
type feed interface {
	Add(obj Object) error
	Update(obj Object) error
	Delete(obj Object) error
	Replace(objs []Object, resourceVersion string) error
	Bookmark(resourceVersion string) error
}

// runRecorder is an inline handler that records each notification with the
// resourceVersion the cache holds for its key at the time of the call
// ("cache@-" when the key is not cached).
type runRecorder struct {
	inf    *Informer[*corev1.Pod]
	events []string // written on the informer's goroutine only
}

func (r *runRecorder) cached(p *corev1.Pod) string {
	if c, ok := r.inf.Get(p.Namespace, p.Name); ok {
		return "cache@" + c.ResourceVersion
	}
	return "cache@-"
}

func (r *runRecorder) OnAdd(p *corev1.Pod, initial bool) {
	r.events = append(r.events, fmt.Sprintf("add %s@%s initial=%t %s", p.Name, p.ResourceVersion, initial, r.cached(p)))
}

func (r *runRecorder) OnUpdate(old, p *corev1.Pod) {
	r.events = append(r.events, fmt.Sprintf("update %s@%s→%s %s", p.Name, old.ResourceVersion, p.ResourceVersion, r.cached(p)))
}

func (r *runRecorder) OnDelete(d Deleted[*corev1.Pod]) {
	rv := "<nil>"
	if d.Object != nil {
		rv = d.Object.ResourceVersion
	}
	r.events = append(r.events, fmt.Sprintf("delete %s@%s unknown=%t %s", d.Key, rv, d.FinalStateUnknown, r.cached(at(pod(strings.TrimPrefix(d.Key, "default/")), ""))))
}

// TestProcessRuns drives the informer's FIFO by hand — the reflector's
// calls, then one Pop with the informer's own process func — so that every
// unit is known: a run of watch events is applied to the cache in order and
// then notified in order (each handler call finds the cache at the state
// of the whole run, never older than its event); a Replace batch is never
// part of a run, even of one delta; deletions and re-adds of one key in a
// run come out as such; a relist after a run is silent for the objects it
// left unchanged; only the initial list's adds are initial.
func TestProcessRuns(t *testing.T) {
	a, b, c := pod("a"), pod("b"), pod("c")
	type step struct {
		queue func(q feed) error
		want  []string // notifications of the one Pop, in order
		left  int      // deltas still queued after it
	}
	steps := []step{
		{ // the initial list, then events queued behind it
			queue: func(q feed) error {
				return firstErr(q.Replace([]Object{at(a, "1"), at(b, "2")}, "2"), q.Update(at(a, "3")))
			},
			want: []string{"add a@1 initial=true cache@1", "add b@2 initial=true cache@2"},
			left: 1,
		},
		{ // one run: the update queued behind the list, then a burst
			queue: func(q feed) error {
				return firstErr(q.Delete(at(b, "4")), q.Add(at(b, "5")), q.Bookmark("6"),
					q.Delete(at(c, "7")), // never cached: no notification
					q.Update(at(a, "8")))
			},
			want: []string{
				"update a@1→3 cache@8",
				"delete default/b@4 unknown=false cache@5",
				"add b@5 initial=false cache@5",
				"update a@3→8 cache@8",
			},
		},
		{ // a relist of one object is handed alone, before the run behind it
			queue: func(q feed) error {
				return firstErr(q.Replace([]Object{at(a, "8")}, "10"), q.Add(at(c, "11")), q.Update(at(a, "12")))
			},
			// a unchanged: silent; b missing: deleted, last state known.
			want: []string{"delete default/b@5 unknown=true cache@-"},
			left: 2,
		},
		{
			want: []string{"add c@11 initial=false cache@11", "update a@8→12 cache@12"},
		},
		{ // a relist queued behind a run does not join it; one of a single
			// deletion (no object listed) neither
			queue: func(q feed) error {
				return firstErr(q.Delete(at(c, "13")), q.Add(at(c, "14")), q.Delete(at(c, "15")), q.Add(at(c, "16")),
					q.Replace([]Object{at(c, "16")}, "17"), q.Replace(nil, "18"))
			},
			want: []string{
				"delete default/c@13 unknown=false cache@16",
				"add c@14 initial=false cache@16",
				"delete default/c@15 unknown=false cache@16",
				"add c@16 initial=false cache@16",
			},
			left: 3, // [Replaced c@16, Deleted? a@12], then [Deleted? c@16]
		},
		{ // c relisted unchanged: silent
			want: []string{"delete default/a@12 unknown=true cache@-"},
			left: 1,
		},
		{
			want: []string{"delete default/c@16 unknown=true cache@-"},
		},
	}

	inf := newPodInformer(t, newFakeServer(), Options[*corev1.Pod]{})
	rec := &runRecorder{inf: inf}
	if _, err := inf.AddHandler(rec, HandlerOptions{Inline: true}); err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t)
	for i, st := range steps {
		if st.queue != nil {
			if err := st.queue(inf.s.fifo); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		rec.events = nil
		if err := inf.s.fifo.Pop(ctx, inf.s.process); err != nil {
			t.Fatalf("step %d: Pop: %v", i, err)
		}
		if !slices.Equal(rec.events, st.want) {
			t.Fatalf("step %d:\n got %q\nwant %q", i, rec.events, st.want)
		}
		if got := inf.Queued(); got != st.left {
			t.Fatalf("step %d: %d deltas queued after the Pop, want %d", i, got, st.left)
		}
		if !inf.HasSynced() {
			t.Fatalf("step %d: not synced after the initial list was processed", i)
		}
	}
	if inf.Len() != 0 {
		t.Fatalf("%d objects cached after a relist of none", inf.Len())
	}
}

// firstErr returns the first non-nil error of errs.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestHandlerChangesDuringRun: a handler added while a run is being
// notified waits for the whole run (the informer's mutex is held from the
// first cache update of a run to its last notification): its synthetic adds
// are the cache after the run, and it receives nothing of the run. A
// handler removed meanwhile gets the whole run, and nothing after.
func TestHandlerChangesDuringRun(t *testing.T) {
	ctx := timeout(t)
	inf := newPodInformer(t, newFakeServer(), Options[*corev1.Pod]{})
	stuck, release := make(chan struct{}), make(chan struct{})
	first := newRecorder()
	first.check = func(ev string, p *corev1.Pod) {
		if p.Name == "a" && p.ResourceVersion == "2" {
			close(stuck)
			<-release
		}
	}
	if _, err := inf.AddHandler(first, HandlerOptions{Inline: true}); err != nil {
		t.Fatal(err)
	}
	gone := newRecorder()
	goneReg, err := inf.AddHandler(gone, HandlerOptions{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	q := inf.s.fifo
	if err := q.Replace(nil, "1"); err != nil {
		t.Fatal(err)
	}
	// One run: the handler "first" is stuck in its first notification.
	for _, err := range []error{q.Add(at(pod("a"), "2")), q.Add(at(pod("b"), "3")), q.Update(at(pod("a"), "4")), q.Delete(at(pod("b"), "5")), q.Add(at(pod("c"), "6"))} {
		if err != nil {
			t.Fatal(err)
		}
	}
	popped := make(chan error, 1)
	go func() { popped <- q.Pop(ctx, inf.s.process) }()
	select {
	case <-stuck:
	case err := <-popped:
		t.Fatalf("the run was processed without notifying a@2 (Pop: %v); first handler got %q", err, first.snapshot())
	case <-ctx.Done():
		t.Fatal("the run was never notified")
	}
	late := &mirror{t: t, objs: map[string]string{}}
	var wg sync.WaitGroup
	var lateErr, removeErr error
	wg.Go(func() { _, lateErr = inf.AddHandler(late, HandlerOptions{Inline: true}) })
	wg.Go(func() { removeErr = inf.RemoveHandler(goneReg) })
	close(release)
	if err := <-popped; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if lateErr != nil || removeErr != nil {
		t.Fatal(lateErr, removeErr)
	}
	want := map[string]string{"default/a": "4", "default/c": "6"}
	if got := late.view(); !maps.Equal(got, want) {
		t.Fatalf("late handler's view %v, want the cache after the run %v", got, want)
	}
	run := []string{"add a@2 initial=false", "add b@3 initial=false", "update a@2->4", "delete default/b@5 unknown=false", "add c@6 initial=false"}
	if got := first.snapshot(); !slices.Equal(got, run) {
		t.Fatalf("first handler got %q, want %q", got, run)
	}
	if got := gone.snapshot(); !slices.Equal(got, run) {
		t.Fatalf("removed handler got %q, want the whole run %q", got, run)
	}
	// One more event: the late handler gets it, the removed one does not.
	if err := q.Update(at(pod("c"), "7")); err != nil {
		t.Fatal(err)
	}
	if err := q.Pop(ctx, inf.s.process); err != nil {
		t.Fatal(err)
	}
	if got := late.view()["default/c"]; got != "7" {
		t.Fatalf("late handler has c@%s, want c@7", got)
	}
	if got := gone.snapshot(); len(got) != len(run) {
		t.Fatalf("removed handler got %q after its removal", got[len(run):])
	}
}
