package liveview

import (
	"container/list"
	"fmt"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"kloop.dev/kloop/controller"
)

// Defaults of TimelineOptions.
const (
	DefaultMaxObjects = 1000
	DefaultPerObject  = 32
	// maxWrites bounds the writes kept per entry.
	maxWrites = 16
)

// TimelineOptions configures a Timeline. The zero value works.
type TimelineOptions struct {
	// MaxObjects bounds the objects remembered; past it, the least
	// recently observed object is forgotten. Default DefaultMaxObjects.
	MaxObjects int
	// PerObject bounds the entries kept per object: the last ones.
	// Default DefaultPerObject.
	PerObject int
}

func (o *TimelineOptions) setDefaults() {
	if o.MaxObjects == 0 {
		o.MaxObjects = DefaultMaxObjects
	}
	if o.PerObject == 0 {
		o.PerObject = DefaultPerObject
	}
}

func (o *TimelineOptions) validate() error {
	if o.MaxObjects < 0 {
		return fmt.Errorf("liveview: TimelineOptions.MaxObjects %d is negative", o.MaxObjects)
	}
	if o.PerObject < 0 {
		return fmt.Errorf("liveview: TimelineOptions.PerObject %d is negative", o.PerObject)
	}
	return nil
}

// ObjectKey names an object as one controller sees it.
type ObjectKey struct {
	Controller string `json:"controller"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// Trigger is one event merged into a reconcile: what happened, to which
// object, mapped by which handler, and when it was enqueued.
type Trigger struct {
	Type            string    `json:"type"`
	Kind            string    `json:"kind,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Handler         string    `json:"handler,omitempty"`
	Time            time.Time `json:"time"`
}

// Entry is one step of an object's timeline: a reconcile (with the events
// merged into it, its result and writes), a skip while the cache was behind
// the object's writes, or a hot-loop or fighting-writers report.
type Entry struct {
	Time time.Time `json:"time"`
	// Type is controller.ObservationType's name: Reconciled, StaleSkip,
	// StaleTimeout, HotLoop, FightingWriters.
	Type        string `json:"type"`
	ReconcileID string `json:"reconcileID,omitempty"`
	// Triggers are the last events merged (at most trigger.Recent), and
	// TriggersTotal how many were merged in all.
	Triggers      []Trigger `json:"triggers,omitempty"`
	TriggersTotal int       `json:"triggersTotal,omitempty"`
	// DurationMS is the reconcile's duration in milliseconds.
	DurationMS   float64            `json:"durationMs,omitempty"`
	Result       string             `json:"result,omitempty"`
	Error        string             `json:"error,omitempty"`
	RequeueAfter string             `json:"requeueAfter,omitempty"`
	Writes       []controller.Write `json:"writes,omitempty"`
	// WritesDropped counts the writes past the first 16, not kept.
	WritesDropped int    `json:"writesDropped,omitempty"`
	Message       string `json:"message,omitempty"`
}

// ObjectSummary is an object of the timeline, for the list of recent ones.
type ObjectSummary struct {
	ObjectKey
	Last       time.Time `json:"last"`
	Reconciles int       `json:"reconciles"`
	LastResult string    `json:"lastResult,omitempty"`
	StaleSkips int       `json:"staleSkips,omitempty"`
	HotLoops   int       `json:"hotLoops,omitempty"`
}

// objectLog is one object's ring of entries and its counts.
type objectLog struct {
	sum     ObjectSummary
	entries []Entry // a ring of at most PerObject
	next    int     // where the next entry goes once the ring is full
}

// Timeline keeps the recent history of each object the controllers handle
// (a controller.Observer), bounded: at most PerObject entries for each of
// at most MaxObjects objects, the least recently observed forgotten first.
// It is safe for concurrent use.
type Timeline struct {
	opts TimelineOptions

	mu sync.Mutex // guards objs and lru
	// objs indexes lru's elements, whose values are *objectLog; the front
	// is the most recently observed.
	objs map[ObjectKey]*list.Element
	lru  *list.List
}

var _ controller.Observer = (*Timeline)(nil)

// maxText is how much of an error or a message an entry keeps: the
// timeline bounds its memory by entries, and a denial or a fighting-writers
// report can be long.
const maxText = 512

// clip cuts s to maxText bytes (on a rune boundary), marking the cut.
func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// NewTimeline returns an empty Timeline.
func NewTimeline(opts TimelineOptions) (*Timeline, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Timeline{opts: opts, objs: map[ObjectKey]*list.Element{}, lru: list.New()}, nil
}

// Observe records o in the timeline of its object (controller.Observer).
func (t *Timeline) Observe(ctrl string, o *controller.Observation) {
	e := Entry{Time: o.Start, Type: o.Type.String(), ReconcileID: o.ReconcileID, Message: clip(o.Message)}
	if tr := o.Triggers; tr != nil {
		e.TriggersTotal = tr.Total()
		e.Triggers = make([]Trigger, 0, tr.Len())
		for i := range tr.Len() {
			c := tr.At(i)
			x := Trigger{Type: c.Type.String(), Kind: c.Source, Handler: c.Handler, Time: c.Time}
			if c.Object != nil {
				x.Namespace, x.Name, x.ResourceVersion = c.Object.GetNamespace(), c.Object.GetName(), c.Object.GetResourceVersion()
			}
			e.Triggers = append(e.Triggers, x)
		}
	}
	if o.Type == controller.Reconciled {
		e.DurationMS = float64(o.Duration) / float64(time.Millisecond)
		e.Result = string(o.Outcome)
		if o.Err != nil {
			e.Error = clip(o.Err.Error())
		}
		if o.RequeueAfter > 0 {
			e.RequeueAfter = o.RequeueAfter.String()
		}
		n := min(len(o.Writes), maxWrites)
		e.Writes = append([]controller.Write(nil), o.Writes[:n]...)
		e.WritesDropped = len(o.Writes) - n
	}
	key := ObjectKey{Controller: ctrl, Namespace: o.Request.Namespace, Name: o.Request.Name}

	t.mu.Lock()
	defer t.mu.Unlock()
	var ol *objectLog
	if el, ok := t.objs[key]; ok {
		t.lru.MoveToFront(el)
		ol = el.Value.(*objectLog)
	} else if t.lru.Len() >= t.opts.MaxObjects {
		// Full: the least recently observed object's log is reused.
		el := t.lru.Back()
		ol = el.Value.(*objectLog)
		delete(t.objs, ol.sum.ObjectKey)
		clear(ol.entries)
		ol.entries, ol.next = ol.entries[:0], 0
		ol.sum = ObjectSummary{ObjectKey: key}
		t.lru.MoveToFront(el)
		t.objs[key] = el
	} else {
		ol = &objectLog{sum: ObjectSummary{ObjectKey: key}}
		t.objs[key] = t.lru.PushFront(ol)
	}
	if len(ol.entries) < t.opts.PerObject {
		ol.entries = append(ol.entries, e)
	} else {
		ol.entries[ol.next] = e
		ol.next = (ol.next + 1) % t.opts.PerObject
	}
	s := &ol.sum
	s.Last = e.Time
	switch o.Type {
	case controller.Reconciled:
		s.Reconciles++
		s.LastResult = e.Result
	case controller.StaleSkip, controller.StaleTimeout:
		s.StaleSkips++
	case controller.HotLoopReported, controller.FightingWritersReported:
		s.HotLoops++
	}
}

// Entries returns the timeline of key, oldest first; false when the object
// is not (or no longer) in the timeline.
func (t *Timeline) Entries(key ObjectKey) ([]Entry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.objs[key]
	if !ok {
		return nil, false
	}
	ol := el.Value.(*objectLog)
	out := make([]Entry, 0, len(ol.entries))
	out = append(out, ol.entries[ol.next:]...)
	return append(out, ol.entries[:ol.next]...), true
}

// Objects returns the objects of the timeline, the most recently observed
// first, at most limit of them (all when limit ≤ 0), ordered by
// controller, namespace and name among equal times.
func (t *Timeline) Objects(limit int) []ObjectSummary {
	t.mu.Lock()
	n := t.lru.Len()
	if limit > 0 {
		n = min(n, limit)
	}
	out := make([]ObjectSummary, 0, n)
	for el := t.lru.Front(); el != nil && len(out) < n; el = el.Next() {
		out = append(out, el.Value.(*objectLog).sum)
	}
	t.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Last.Equal(out[j].Last) {
			return out[i].Last.After(out[j].Last)
		}
		a, b := out[i].ObjectKey, out[j].ObjectKey
		if a.Controller != b.Controller {
			return a.Controller < b.Controller
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}
