package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile/trigger"
)

// Trigger is one cause of a reconcile: an event that a handler mapped to the
// request, or one of the controller's own requeues.
type Trigger struct {
	// Type says what happened: trigger.Update, trigger.Error…
	Type trigger.Type
	// Kind is the source of the event: the kind of its object
	// ("ConfigMap", "Widget.example.com") or the source's name; empty for
	// the controller's own requeues.
	Kind string
	// Namespace, Name and ResourceVersion are the event's object's (for a
	// delete, its last known state); empty for requeues.
	Namespace, Name, ResourceVersion string
	// Handler names the event handler that mapped the event to the request.
	Handler string
	// Time is when the request was added for this cause.
	Time time.Time
}

// String renders t in one line: "Update ConfigMap ns/name rv=42 by
// EnqueueRequestForObject".
func (t Trigger) String() string {
	var b strings.Builder
	b.WriteString(t.Type.String())
	if t.Kind != "" {
		b.WriteString(" ")
		b.WriteString(t.Kind)
	}
	if t.Name != "" {
		b.WriteString(" ")
		if t.Namespace != "" {
			b.WriteString(t.Namespace)
			b.WriteString("/")
		}
		b.WriteString(t.Name)
	}
	if t.ResourceVersion != "" {
		b.WriteString(" rv=")
		b.WriteString(t.ResourceVersion)
	}
	if t.Handler != "" {
		b.WriteString(" by ")
		b.WriteString(t.Handler)
	}
	return b.String()
}

// Triggers is why a reconcile runs: the causes merged into it since the
// key's last reconcile began. The work queue keeps a bounded record per
// key — the last trigger.Recent causes, and a count of all of
// them by type — so a burst of a thousand events is one reconcile with
// Total 1000 and its last four events.
type Triggers struct {
	// Recent are the last causes, oldest first.
	Recent []Trigger
	// Total counts every cause merged into the reconcile, those in Recent
	// and the older ones; causes added without a trigger (a plain
	// Enqueuer.Add of a custom source) count as trigger.Unknown.
	Total int
	// Counts counts them by type.
	Counts map[trigger.Type]int
}

// TriggersFrom returns why the reconcile of ctx runs; ok is false outside a
// controller's reconcile, or when the controller keeps no trigger records
// (controller.Options.DisableTriggers).
//
// It is for observability only — logs, traces, debugging "why was I
// reconciled?". A reconcile must not decide what to do from it: events are
// merged, dropped from the record past its bound, and lost across restarts
// and relists; the only contract is that the state in the cache is the
// state to reconcile (level-triggered). Call it during the reconcile (the
// record is the worker's, reused for its next key); each call builds a new
// value, which the caller may keep. The record is kept at no allocation per
// event when nobody calls it.
func TriggersFrom(ctx context.Context) (t Triggers, ok bool) {
	sc := rctx.From(ctx)
	if sc == nil || sc.Triggers == nil {
		return Triggers{}, false
	}
	return triggersOf(sc.Triggers), true
}

// triggersOf builds the Triggers of a work queue's record.
func triggersOf(r *trigger.Record) Triggers {
	t := Triggers{Total: r.Total(), Recent: make([]Trigger, 0, r.Len()), Counts: map[trigger.Type]int{}}
	for typ, n := range r.Counts() {
		t.Counts[typ] = n
	}
	for i := range r.Len() {
		wt := r.At(i)
		tr := Trigger{Type: wt.Type, Kind: wt.Source, Handler: wt.Handler, Time: wt.Time}
		if o := wt.Object; o != nil && !isNil(o) {
			tr.Namespace, tr.Name, tr.ResourceVersion = o.GetNamespace(), o.GetName(), o.GetResourceVersion()
		}
		t.Recent = append(t.Recent, tr)
	}
	return t
}

func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// String renders the triggers in one line: the total, then the recent
// causes, oldest first.
func (t Triggers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", t.Total)
	if len(t.Recent) > 0 {
		b.WriteString(": ")
		for i, r := range t.Recent {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(r.String())
		}
	}
	return b.String()
}

// LogValue renders the triggers as a group: total, then recent (one text,
// the causes oldest first, separated by "; ", each with how long before
// now it was added).
func (t Triggers) LogValue() slog.Value {
	now := time.Now()
	var b strings.Builder
	for i, r := range t.Recent {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.String())
		if !r.Time.IsZero() {
			fmt.Fprintf(&b, " (%s ago)", now.Sub(r.Time).Round(time.Microsecond))
		}
	}
	return slog.GroupValue(slog.Int("total", t.Total), slog.String("recent", b.String()))
}
