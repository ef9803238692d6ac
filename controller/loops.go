package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

// Defaults of HotLoopOptions.
const (
	DefaultHotLoopThreshold        = 10
	DefaultFightingWriterThreshold = 5
	DefaultHotLoopWindow           = 30 * time.Second
)

// EventRecorder records Kubernetes Events (client.Recorder is one).
type EventRecorder interface {
	Event(obj runtime.Object, eventType, reason, message string)
}

// HotLoopOptions configures the controller's detector of hot loops and
// fighting writers. The zero value reports, and slows nothing down.
//
// A hot loop is a key whose reconciles are each triggered only by the
// controller's own previous writes and write again, with no generation
// change — the status timestamp written on every reconcile: every write is
// an event, and the loop never stops. Fighting writers are two writers
// that keep setting one field of the key's object to their own value:
// each write is an event for the other. Both are reported — a Warning
// Event on the object, a log line (for a fight, naming the field managers
// and the field paths, read from managedFields), a metric — once per key
// per Window.
type HotLoopOptions struct {
	// Disable turns the detector off. Default false.
	Disable bool
	// Threshold is how many reconciles in a row, each triggered only by
	// the previous one's writes and writing again, make a hot loop.
	// Default DefaultHotLoopThreshold (10).
	Threshold int
	// FightThreshold is how many times in a row another writer's update
	// of the key's object must be answered by the controller writing it
	// again to make a fight (FightThreshold rounds within Window).
	// Default DefaultFightingWriterThreshold (5).
	FightThreshold int
	// Window bounds the detection: steps of a loop or a fight further
	// apart than Window start it over; a key is reported at most once per
	// Window. Default DefaultHotLoopWindow (30 s).
	Window time.Duration
	// SlowDown, when positive, is the least time between two reconciles
	// of a key reported as looping or fighting, until it stops (a key
	// reconciled sooner is requeued for the rest of it, its causes
	// kept). Opt-in: default 0, nothing is slowed down.
	SlowDown time.Duration
	// Recorder receives the Warning Events (reasons HotLoop and
	// FightingWriters). Default none: the report is a log line and a
	// metric only. The builder sets the manager's recorder.
	Recorder EventRecorder
	// Get reads the key's object from the API server, with its
	// managedFields (a metadata-only Get is enough): the detector reads
	// the other writer's fields from it, and records the Event on it.
	// Default none: fights are reported without the field managers and
	// paths, and Events go on the object of the triggering event. The
	// builder sets an uncached metadata Get of the For kind.
	Get func(ctx context.Context, req reconcile.Request) (handler.Object, error)
}

func (o *HotLoopOptions) setDefaults() {
	if o.Threshold == 0 {
		o.Threshold = DefaultHotLoopThreshold
	}
	if o.FightThreshold == 0 {
		o.FightThreshold = DefaultFightingWriterThreshold
	}
	if o.Window == 0 {
		o.Window = DefaultHotLoopWindow
	}
}

func (o *HotLoopOptions) validate() error {
	switch {
	case o.Threshold < 2:
		return fmt.Errorf("HotLoop.Threshold %d is below 2", o.Threshold)
	case o.FightThreshold < 2:
		return fmt.Errorf("HotLoop.FightThreshold %d is below 2", o.FightThreshold)
	case o.Window < 0:
		return fmt.Errorf("HotLoop.Window %s is negative", o.Window)
	case o.SlowDown < 0:
		return fmt.Errorf("HotLoop.SlowDown %s is negative", o.SlowDown)
	}
	return nil
}

// loopDetector watches, per key, the triggers and the writes of each
// reconcile.
type loopDetector struct {
	opts  HotLoopOptions
	log   *slog.Logger
	stats *stats

	// n is len(keys), read without the lock: most reconciles find no
	// state and take no lock.
	n    atomic.Int64
	mu   sync.Mutex // guards keys and sweepAt
	keys map[reconcile.Request]*loopState
	// sweepAt is the size of keys at which the states idle for a Window
	// are dropped.
	sweepAt int
	// notify, when set, is told of each report (the controller's
	// Observer).
	notify func(req reconcile.Request, typ ObservationType, msg string)
}

// loopState is what the detector knows of one key. Only the key's worker
// reads or writes it (a key is held by one worker at a time).
type loopState struct {
	last time.Time // the last reconcile's end; written under loopDetector.mu
	// ours are the objects (and their resourceVersions) the controller
	// wrote in the key's last reconciles, to recognise the events of its
	// own writes among the triggers.
	ours []rctx.Write
	// chain counts reconciles in a row triggered by ours only that wrote
	// again; since when.
	chain      int
	chainStart time.Time
	// fight counts the rounds in a row of another writer updating the
	// key's object and the controller writing it again; since when.
	fight      int
	fightStart time.Time
	// theirs is the key's object as the server had it before the last
	// round's reconcile (another writer's last update), with its
	// managedFields: read when a fight is about to be reported.
	theirs handler.Object
	// lastOwn is the controller's last write of the key's object.
	lastOwn *rctx.Write
	// reported is when the key was last reported; slow: it is slowed down
	// (SlowDown) until its loop or fight stops.
	reported time.Time
	slow     bool
	started  time.Time // the last reconcile's start
}

func newLoopDetector(opts HotLoopOptions, log *slog.Logger, st *stats) *loopDetector {
	return &loopDetector{opts: opts, log: log, stats: st, keys: map[reconcile.Request]*loopState{}, sweepAt: 1024}
}

func (d *loopDetector) state(req reconcile.Request, create bool) *loopState {
	if !create && d.n.Load() == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.keys[req]
	if s == nil && create {
		s = &loopState{}
		d.keys[req] = s
		d.n.Store(int64(len(d.keys)))
	}
	return s
}

// before runs ahead of a reconcile of req: it reports how long to hold the
// key back (SlowDown) and, when a fight is about to be reported, reads the
// other writer's version of the object. keepFields says whether the
// reconcile's writes must carry their managedFields.
func (d *loopDetector) before(ctx context.Context, req reconcile.Request, trigs *trigger.Record, now time.Time) (wait time.Duration, keepFields bool) {
	s := d.state(req, false)
	if s == nil {
		return 0, false
	}
	if s.slow && d.opts.SlowDown > 0 {
		if w := s.started.Add(d.opts.SlowDown).Sub(now); w > 0 {
			return w, false
		}
	}
	s.started = now
	s.theirs = nil
	if s.fight+1 >= d.opts.FightThreshold && d.opts.Get != nil && outsideUpdate(req, trigs, s) {
		if obj, err := d.opts.Get(ctx, req); err == nil {
			s.theirs = obj
		} else {
			d.log.Debug("hot-loop detector: reading the object", "namespace", req.Namespace, "name", req.Name, "err", err)
		}
		return 0, true
	}
	return 0, s.fight+1 >= d.opts.FightThreshold
}

// after takes in a finished reconcile of req: its triggers and writes;
// failed: it returned an error (a conflict with the other writer, often),
// which neither continues nor ends a fight.
func (d *loopDetector) after(req reconcile.Request, trigs *trigger.Record, writes []rctx.Write, failed bool, now time.Time) {
	s := d.state(req, len(writes) > 0)
	if s == nil {
		return
	}
	window := d.opts.Window
	// idle: the key's last reconcile is too long ago to continue a loop or
	// a fight. sweep reads last under mu.
	d.mu.Lock()
	idle := now.Sub(s.last) > window
	s.last = now
	d.mu.Unlock()

	// Hot loop: triggered by the controller's own last writes only, and
	// writing again without a generation change.
	switch {
	case len(writes) > 0 && !idle && selfTriggered(trigs, s.ours) && noGenerationChange(writes, s.ours):
		if s.chain == 0 {
			s.chainStart = now
		}
		s.chain++
	default:
		s.chain = 0
	}

	// Fight: another writer updated the key's object, and the controller
	// wrote it again.
	own := ownWrite(req, writes)
	switch {
	case own != nil && !idle && outsideUpdate(req, trigs, s) && contested(own, trigs, req, s):
		if s.fight == 0 {
			s.fightStart = now
		}
		s.fight++
	case own != nil || !failed && outsideUpdate(req, trigs, s):
		s.fight = 0
	}

	if len(writes) > 0 {
		s.ours = append(s.ours[:0], writes...)
		for i := range s.ours {
			s.ours[i].CaughtUp = nil
		}
	}
	if own != nil {
		cp := *own
		cp.CaughtUp = nil
		s.lastOwn = &cp
	}
	if s.chain == 0 && s.fight == 0 {
		s.slow = false
	}

	recent := now.Sub(s.reported) <= window && !s.reported.IsZero()
	switch {
	case s.chain >= d.opts.Threshold && !recent:
		s.reported, s.slow = now, true
		d.reportLoop(req, trigs, writes, s, now)
	case s.fight >= d.opts.FightThreshold && !recent:
		if d.reportFight(req, trigs, own, s, now) {
			s.reported, s.slow = now, true
		}
	}
	if len(writes) == 0 && s.chain == 0 && s.fight == 0 && !s.slow {
		d.mu.Lock()
		delete(d.keys, req)
		d.n.Store(int64(len(d.keys)))
		d.mu.Unlock()
		return
	}
	d.sweep(now)
}

// sweep drops the states of keys idle for a Window, once there are many.
func (d *loopDetector) sweep(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.keys) < d.sweepAt {
		return
	}
	for k, s := range d.keys {
		if now.Sub(s.last) > d.opts.Window {
			delete(d.keys, k)
		}
	}
	d.n.Store(int64(len(d.keys)))
	d.sweepAt = max(1024, 2*len(d.keys))
}

// selfTriggered reports whether every cause of the reconcile was an event
// of one of the controller's own writes: each kept trigger names an object
// and resourceVersion among ours, and none was dropped from the record.
func selfTriggered(trigs *trigger.Record, ours []rctx.Write) bool {
	if trigs == nil || len(ours) == 0 {
		return false
	}
	kept := 0
	for i := range trigs.Len() {
		t := trigs.At(i)
		if t.Type == trigger.Stale || t.Type == trigger.SlowDown {
			continue // the controller holding the key back
		}
		if !isObjectEvent(t) || !isOurs(t.Object, ours) {
			return false
		}
		kept++
	}
	return kept > 0 && kept == trigs.Total()-trigs.Count(trigger.Stale)-trigs.Count(trigger.SlowDown)
}

func isObjectEvent(t trigger.Cause) bool {
	switch t.Type {
	case trigger.Create, trigger.Update, trigger.Delete:
		return t.Object != nil && !handler.IsNil(asObject(t.Object))
	}
	return false
}

// asObject returns o as a handler.Object, nil if it is not one.
func asObject(o trigger.Object) handler.Object {
	obj, _ := o.(handler.Object)
	return obj
}

// isOurs reports whether the event's object is the state one of ours left.
func isOurs(o trigger.Object, ours []rctx.Write) bool {
	rv := o.GetResourceVersion()
	for _, w := range ours {
		if w.ResourceVersion == rv && w.Name == o.GetName() && w.Namespace == o.GetNamespace() {
			return true
		}
	}
	return false
}

// noGenerationChange reports whether the writes changed no object's
// generation since the controller's previous writes of it (an object not
// written before counts as changed).
func noGenerationChange(writes, ours []rctx.Write) bool {
	for _, w := range writes {
		if w.Deleted {
			return false
		}
		i := slices.IndexFunc(ours, func(o rctx.Write) bool {
			return o.Kind == w.Kind && o.Namespace == w.Namespace && o.Name == w.Name
		})
		if i < 0 || ours[i].Generation != w.Generation {
			return false
		}
	}
	return true
}

// ownWrite returns the reconcile's last write of req's own object (not a
// deletion), nil if none. The key's object is told apart from others by
// namespace and name: a controller's key names an object of its For kind.
func ownWrite(req reconcile.Request, writes []rctx.Write) *rctx.Write {
	for i := len(writes) - 1; i >= 0; i-- {
		if w := &writes[i]; w.Namespace == req.Namespace && w.Name == req.Name && !w.Deleted {
			return w
		}
	}
	return nil
}

// outsideUpdate reports whether the reconcile was caused by an update of
// req's own object that is not one of the controller's writes.
func outsideUpdate(req reconcile.Request, trigs *trigger.Record, s *loopState) bool {
	if trigs == nil {
		return false
	}
	for i := range trigs.Len() {
		t := trigs.At(i)
		if t.Type == trigger.Update && isObjectEvent(t) && t.Object.GetNamespace() == req.Namespace &&
			t.Object.GetName() == req.Name && !isOurs(t.Object, s.ours) {
			return true
		}
	}
	return false
}

// contested reports whether the controller's write own, answering another
// writer's update of the object, can be over a field that writer set: not
// when the controller writes only the status and the other writer changed
// the spec (a new generation) — a user's edit answered by a status update.
func contested(own *rctx.Write, trigs *trigger.Record, req reconcile.Request, s *loopState) bool {
	if own.Subresource != "status" || s.lastOwn == nil {
		return true
	}
	for i := range trigs.Len() {
		t := trigs.At(i)
		if t.Type != trigger.Update || !isObjectEvent(t) || t.Object.GetName() != req.Name || t.Object.GetNamespace() != req.Namespace {
			continue
		}
		if o := asObject(t.Object); o != nil && o.GetGeneration() == s.lastOwn.Generation {
			return true // another writer changed no spec: metadata or status
		}
	}
	return false
}

func (d *loopDetector) reportLoop(req reconcile.Request, trigs *trigger.Record, writes []rctx.Write, s *loopState, now time.Time) {
	d.stats.hotLoops.Add(1)
	what := describeWrites(writes)
	msg := fmt.Sprintf("reconciled and written %d times in a row in %s, each reconcile triggered only by the controller's own previous write and writing again with no generation change (%s): a value that changes on every reconcile, such as a timestamp in the status, is written each time",
		s.chain, now.Sub(s.chainStart).Round(time.Millisecond), what)
	d.log.Warn("hot loop: "+msg, "namespace", req.Namespace, "name", req.Name, "reconciles", s.chain, "writes", what,
		"slowDown", d.opts.SlowDown)
	d.event(req, trigs, s, "HotLoop", msg)
}

// reportFight reports the fight over req's object, naming the field
// managers and paths when managedFields tell them; it reports nothing (and
// returns false) when they show that no field changed hands.
func (d *loopDetector) reportFight(req reconcile.Request, trigs *trigger.Record, own *rctx.Write, s *loopState, now time.Time) bool {
	var managers, paths []string
	if s.theirs != nil && own != nil && len(own.ManagedFields) > 0 {
		managers, paths = changedHands(s.theirs.GetManagedFields(), own.ManagedFields)
		if len(paths) == 0 {
			// Another writer and the controller alternate, but no field
			// went from one to the other: two writers of different
			// fields, not a fight.
			s.fight = 0
			return false
		}
	}
	d.stats.fights.Add(1)
	msg := fmt.Sprintf("another writer and this controller rewrote the object %d times in a row in %s, each undoing the other",
		s.fight, now.Sub(s.fightStart).Round(time.Millisecond))
	if len(paths) > 0 {
		msg += fmt.Sprintf(": field managers %s keep taking %s from each other (kubectl get -o yaml --show-managed-fields shows them); give each field one owner",
			strings.Join(managers, " and "), strings.Join(paths, ", "))
	} else {
		msg += ": kubectl get -o yaml --show-managed-fields names the field managers"
	}
	d.log.Warn("fighting writers: "+msg, "namespace", req.Namespace, "name", req.Name, "rounds", s.fight,
		"managers", managers, "fields", paths, "slowDown", d.opts.SlowDown)
	d.event(req, trigs, s, "FightingWriters", msg)
	return true
}

// event records a Warning Event on req's object: the one Get read, else the
// object of the reconcile's last trigger of it.
func (d *loopDetector) event(req reconcile.Request, trigs *trigger.Record, s *loopState, reason, msg string) {
	if d.notify != nil {
		typ := HotLoopReported
		if reason == "FightingWriters" {
			typ = FightingWritersReported
		}
		d.notify(req, typ, msg)
	}
	if d.opts.Recorder == nil {
		return
	}
	obj := s.theirs
	if obj == nil && trigs != nil {
		for i := trigs.Len() - 1; i >= 0 && obj == nil; i-- {
			t := trigs.At(i)
			if isObjectEvent(t) && t.Object.GetName() == req.Name && t.Object.GetNamespace() == req.Namespace {
				obj = asObject(t.Object)
			}
		}
	}
	if obj == nil && d.opts.Get != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		obj, _ = d.opts.Get(ctx, req)
	}
	if obj == nil {
		return
	}
	d.opts.Recorder.Event(obj, "Warning", reason, msg)
}

// changedHands compares the managedFields before the controller's write
// (another writer's last update) with those after it, and returns the
// managers between whom fields changed hands and those fields' paths,
// sorted.
func changedHands(before, after []metav1.ManagedFieldsEntry) (managers, paths []string) {
	prev := owners(before)
	mset := map[string]bool{}
	for path, now := range owners(after) {
		was, ok := prev[path]
		if !ok || was == now {
			continue
		}
		paths = append(paths, path)
		mset[was], mset[now] = true, true
	}
	for m := range mset {
		managers = append(managers, m)
	}
	slices.Sort(managers)
	slices.Sort(paths)
	return managers, paths
}

// owners maps each leaf field path of managedFields to its manager
// ("manager (operation)" for an Apply, so that an apply and an update of
// one manager name stay apart).
func owners(mf []metav1.ManagedFieldsEntry) map[string]string {
	out := map[string]string{}
	for _, e := range mf {
		if e.FieldsV1 == nil {
			continue
		}
		name := fmt.Sprintf("%q", e.Manager)
		if e.Operation == metav1.ManagedFieldsOperationApply {
			name += " (apply)"
		}
		if e.Subresource != "" {
			name += " (" + e.Subresource + ")"
		}
		var tree map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &tree) != nil {
			continue
		}
		leaves("", tree, func(p string) { out[p] = name })
	}
	return out
}

// leaves calls fn with the path of each leaf of a fieldsV1 tree: "f:name"
// is .name, "k:{…}" a list item by key, "v:…" a set value, "i:n" an
// index; "." marks the field itself.
func leaves(prefix string, tree map[string]any, fn func(string)) {
	n := 0
	for k, v := range tree {
		if k == "." {
			continue
		}
		n++
		var seg string
		switch {
		case strings.HasPrefix(k, "f:"):
			seg = "." + k[2:]
		case strings.HasPrefix(k, "k:"), strings.HasPrefix(k, "v:"), strings.HasPrefix(k, "i:"):
			seg = "[" + k[2:] + "]"
		default:
			seg = "." + k
		}
		sub, _ := v.(map[string]any)
		leaves(prefix+seg, sub, fn)
	}
	if n == 0 && prefix != "" {
		fn(prefix)
	}
}
