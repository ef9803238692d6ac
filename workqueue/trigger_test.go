package workqueue

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"kloop.dev/kloop/reconcile/trigger"
)

// obj is a trigger.Object.
type obj struct{ ns, name, rv string }

func (o *obj) GetNamespace() string       { return o.ns }
func (o *obj) GetName() string            { return o.name }
func (o *obj) GetResourceVersion() string { return o.rv }

func upd(rv string) trigger.Cause {
	return trigger.Cause{Type: trigger.Update, Source: "ConfigMap", Handler: "h", Object: &obj{"ns", "a", rv}}
}

// describe renders a record: "total=N Type:rv Type:rv …" (oldest first).
func describe(r *trigger.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "total=%d", r.Total())
	for i := range r.Len() {
		t := r.At(i)
		rv := ""
		if t.Object != nil {
			rv = ":" + t.Object.GetResourceVersion()
		}
		fmt.Fprintf(&b, " %s%s", t.Type, rv)
	}
	return b.String()
}

func TestTriggers(t *testing.T) {
	tests := []struct {
		name string
		run  func(q *Queue[string], clock *fakeClock) []string // the records handed out, in order
		want []string
	}{{
		name: "adds of a waiting key merge into one record",
		run: func(q *Queue[string], _ *fakeClock) []string {
			q.AddTriggered("a", AddOptions{}, upd("1"))
			q.AddTriggered("a", AddOptions{}, upd("2"))
			q.Add("a")
			return []string{get(q, "a")}
		},
		want: []string{"total=3 Update:1 Update:2"},
	}, {
		name: "the record keeps the last four and counts all",
		run: func(q *Queue[string], _ *fakeClock) []string {
			for i := range 6 {
				q.AddTriggered("a", AddOptions{}, upd(fmt.Sprint(i+1)))
			}
			return []string{get(q, "a")}
		},
		want: []string{"total=6 Update:3 Update:4 Update:5 Update:6"},
	}, {
		name: "an add while the key is held goes to its next hand-out",
		run: func(q *Queue[string], _ *fakeClock) []string {
			q.AddTriggered("a", AddOptions{}, upd("1"))
			first := get(q, "a")
			q.AddTriggered("a", AddOptions{}, upd("2"))
			q.Done("a")
			return []string{first, get(q, "a")}
		},
		want: []string{"total=1 Update:1", "total=1 Update:2"},
	}, {
		name: "a requeue after an error while held, then an event, merge",
		run: func(q *Queue[string], clock *fakeClock) []string {
			q.AddTriggered("a", AddOptions{}, upd("1"))
			first := get(q, "a")
			q.AddTriggered("a", AddOptions{After: time.Second}, trigger.Cause{Type: trigger.Error})
			q.Done("a")
			q.AddTriggered("a", AddOptions{}, upd("2")) // an event makes it ready at once
			return []string{first, get(q, "a")}
		},
		want: []string{"total=1 Update:1", "total=2 Error Update:2"},
	}, {
		name: "a delayed key keeps its record until it is due",
		run: func(q *Queue[string], clock *fakeClock) []string {
			q.AddTriggered("a", AddOptions{After: time.Second}, trigger.Cause{Type: trigger.RequeueAfter})
			clock.Advance(time.Second)
			return []string{get(q, "a")}
		},
		want: []string{"total=1 RequeueAfter"},
	}, {
		name: "AddAllTriggered records each key's cause; keys beyond the causes are unknown",
		run: func(q *Queue[string], _ *fakeClock) []string {
			q.AddAllTriggered([]string{"a", "b", "a", "c"}, []trigger.Cause{upd("1"), upd("2"), upd("3")}, AddOptions{})
			return []string{get(q, "a"), get(q, "b"), get(q, "c")}
		},
		want: []string{"total=2 Update:1 Update:3", "total=1 Update:2", "total=1"},
	}, {
		name: "AddRecord puts a key back with the record it was handed out with, and one more cause",
		run: func(q *Queue[string], clock *fakeClock) []string {
			q.AddTriggered("a", AddOptions{}, upd("1"))
			q.AddTriggered("a", AddOptions{}, upd("2"))
			var r trigger.Record
			k, _, _ := q.GetWithTriggers(&r)
			q.AddTriggered(k, AddOptions{}, upd("3")) // while held: the next record
			q.AddRecord(k, AddOptions{After: time.Millisecond}, &r, trigger.Cause{Type: trigger.Stale})
			q.Done(k)
			first := get(q, "a")
			q.AddRecord("a", AddOptions{}, &r, trigger.Cause{}) // the zero trigger.Cause: merge only
			return []string{first, get(q, "a")}
		},
		want: []string{"total=4 Update:3 Update:1 Update:2 Stale", "total=2 Update:1 Update:2"},
	}, {
		name: "a plain Get drops the record",
		run: func(q *Queue[string], _ *fakeClock) []string {
			q.AddTriggered("a", AddOptions{}, upd("1"))
			k, _ := q.Get()
			q.Done(k)
			q.Add("a")
			return []string{get(q, "a")}
		},
		want: []string{"total=1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			q, err := New(Options[string]{Clock: clock, Triggers: true})
			if err != nil {
				t.Fatal(err)
			}
			defer q.ShutDown()
			got := tt.run(q, clock)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// get takes key (which must be the next one ready) with its record.
func get(q *Queue[string], key string) string {
	var r trigger.Record
	k, _, shutdown := q.GetWithTriggers(&r)
	if shutdown || k != key {
		return fmt.Sprintf("got %q (shutdown %v), want %q", k, shutdown, key)
	}
	q.Done(k)
	return describe(&r)
}

func TestTriggerTimes(t *testing.T) {
	clock := newFakeClock()
	q, err := New(Options[string]{Clock: clock, Triggers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.ShutDown()
	set := time.Unix(42, 0)
	q.AddAllTriggered([]string{"a", "b"}, []trigger.Cause{upd("1"), {Type: trigger.Create, Time: set}}, AddOptions{})
	var r trigger.Record
	for _, want := range []time.Time{clock.Now(), set} {
		k, _, _ := q.GetWithTriggers(&r)
		if got := r.At(0).Time; !got.Equal(want) {
			t.Errorf("%s: time %v, want %v", k, got, want)
		}
		q.Done(k)
	}
}

func TestTriggersOff(t *testing.T) {
	q, err := New(Options[string]{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.ShutDown()
	q.AddTriggered("a", AddOptions{}, upd("1"))
	r := trigger.Record{}
	r.Add(upd("0")) // must be emptied
	k, _, _ := q.GetWithTriggers(&r)
	if k != "a" || r.Total() != 0 || r.Len() != 0 {
		t.Fatalf("got %q with %s; want a with an empty record", k, describe(&r))
	}
}

// TestTriggersReused: records are reused, not grown per add, and freed when
// the queue drops keys at shutdown.
func TestTriggersReused(t *testing.T) {
	clock := newFakeClock()
	q, err := New(Options[string]{Clock: clock, Triggers: true})
	if err != nil {
		t.Fatal(err)
	}
	var r trigger.Record
	for range 100 {
		q.AddAllTriggered([]string{"a", "b", "a"}, []trigger.Cause{upd("1"), upd("2"), upd("3")}, AddOptions{})
		for range 2 {
			k, _, _ := q.GetWithTriggers(&r)
			q.Done(k)
		}
	}
	if len(q.trigs) > 2 {
		t.Fatalf("%d records for two keys", len(q.trigs))
	}
	q.AddTriggered("c", AddOptions{After: time.Hour}, trigger.Cause{Type: trigger.RequeueAfter})
	q.ShutDown()
	if len(q.trigFree) != len(q.trigs) {
		t.Fatalf("%d of %d records free after shutdown", len(q.trigFree), len(q.trigs))
	}
}

func TestTriggersNoAllocs(t *testing.T) {
	q, err := New(Options[string]{Triggers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.ShutDown()
	keys := []string{"a", "b", "c"}
	ts := []trigger.Cause{upd("1"), upd("2"), upd("3")}
	var r trigger.Record
	q.AddAllTriggered(keys, ts, AddOptions{})
	k, _, _ := q.GetWithTriggers(&r)
	allocs := testing.AllocsPerRun(1000, func() {
		q.AddAllTriggered(keys, ts, AddOptions{})
		k, _, _ = q.NextWithTriggers(k, &r)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per AddAllTriggered+NextWithTriggers", allocs)
	}
}
