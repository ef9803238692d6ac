package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

// Source delivers events to a controller's queue: it maps them to requests
// (usually with a handler.EventHandler through handler.Dispatch) and adds
// them to q, or to low for the objects of the initial list and for resyncs.
// Both enqueuers feed the same queue; low adds at LowPriority.
//
// informer.Source (one shared informer, a handler and predicates) and
// ChannelSource implement it; a test may implement it directly.
type Source interface {
	// Start delivers events until ctx is cancelled, then returns nil. It
	// returns early with an error when the source fails (the controller
	// then stops with that error), or with nil when it has nothing more
	// to deliver. Start is called once, by Controller.Start.
	Start(ctx context.Context, q, low handler.Enqueuer) error
	// HasSynced reports whether the source has delivered its initial
	// state (for an informer: the initial list, through its handlers). The
	// controller reconciles nothing before every source has synced.
	HasSynced() bool
}

// ChannelOptions configures a ChannelSource. The zero value is ready to use.
type ChannelOptions struct {
	// Predicates filter the events: an event reaches the handler only if
	// every predicate passes it. Default: none, every event passes.
	Predicates []predicate.Predicate
}

// ChannelSource delivers the events received on a Go channel, as
// controller-runtime's source.Channel: the way to trigger reconciles from
// outside the API (a webhook, an external system, a timer). It carries any
// handler.Event, not only generic ones; a CreateEvent with IsInInitialList
// is queued at low priority. It has no initial state, so it has always
// synced. It starts once: one controller consumes it.
type ChannelSource struct {
	ch      <-chan handler.Event
	h       handler.EventHandler
	preds   []predicate.Predicate
	started atomic.Bool
}

var _ Source = (*ChannelSource)(nil)

// NewChannelSource returns a source of the events on ch, mapped by h.
func NewChannelSource(ch <-chan handler.Event, h handler.EventHandler, opts ChannelOptions) (*ChannelSource, error) {
	if ch == nil {
		return nil, errors.New("controller: NewChannelSource needs a channel")
	}
	if h == nil {
		return nil, errors.New("controller: NewChannelSource needs an EventHandler")
	}
	return &ChannelSource{ch: ch, h: h, preds: opts.Predicates}, nil
}

// Start delivers the events of the channel until ctx is cancelled or the
// channel is closed.
func (s *ChannelSource) Start(ctx context.Context, q, low handler.Enqueuer) error {
	if q == nil {
		return errors.New("controller: ChannelSource.Start needs an Enqueuer")
	}
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("controller: ChannelSource started twice")
	}
	if low == nil {
		low = q
	}
	// The adds of each event are recorded with it as their cause.
	tq, tlow := triggering(q), triggering(low)
	hname := fmt.Sprintf("%T", s.h)
	if n, ok := s.h.(fmt.Stringer); ok {
		hname = n.String()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-s.ch:
			if !ok {
				return nil
			}
			if e != nil && predicate.Allow(e, s.preds...) {
				t := channelTrigger(e, hname)
				tq.set(t)
				tlow.set(t)
				handler.Dispatch(ctx, s.h, e, tq.or(q), tlow.or(low))
			}
		}
	}
}

// HasSynced returns true: a channel has no initial state to deliver.
func (s *ChannelSource) HasSynced() bool { return true }

// String names the source in logs and errors.
func (s *ChannelSource) String() string { return fmt.Sprintf("channel source %p", s) }

// triggerEnqueuer records, on a TriggerEnqueuer, the current event of a
// source as the cause of every add of the event's handler.
type triggerEnqueuer struct {
	q handler.TriggerEnqueuer
	// mu guards cur: a handler may keep the Enqueuer and add from another
	// goroutine.
	mu  sync.Mutex
	cur trigger.Cause
}

// triggering returns a triggerEnqueuer over q, nil if q records no triggers.
func triggering(q handler.Enqueuer) *triggerEnqueuer {
	if tq, ok := q.(handler.TriggerEnqueuer); ok {
		return &triggerEnqueuer{q: tq}
	}
	return nil
}

func (e *triggerEnqueuer) set(t trigger.Cause) {
	if e != nil {
		e.mu.Lock()
		e.cur = t
		e.mu.Unlock()
	}
}

// or returns e as an Enqueuer, q if e is nil.
func (e *triggerEnqueuer) or(q handler.Enqueuer) handler.Enqueuer {
	if e == nil {
		return q
	}
	return e
}

func (e *triggerEnqueuer) trigger() trigger.Cause {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

func (e *triggerEnqueuer) Add(req reconcile.Request) { e.q.AddTriggered(req, e.trigger()) }

func (e *triggerEnqueuer) AddAfter(req reconcile.Request, d time.Duration) { e.q.AddAfter(req, d) }

// channelTrigger is the cause of the adds of e, a channel source's event:
// its type, and its object's kind (else "channel").
func channelTrigger(e handler.Event, hname string) trigger.Cause {
	t := trigger.Cause{Source: "channel", Handler: hname}
	var obj handler.Object
	switch e := e.(type) {
	case handler.CreateEvent:
		t.Type, obj = trigger.Create, e.Object
		if e.IsInInitialList {
			t.Type = trigger.InitialList
		}
	case handler.UpdateEvent:
		t.Type, obj = trigger.Update, e.ObjectNew
		if handler.IsNil(obj) {
			obj = e.ObjectOld
		} else if !handler.IsNil(e.ObjectOld) && obj.GetResourceVersion() != "" &&
			obj.GetResourceVersion() == e.ObjectOld.GetResourceVersion() {
			t.Type = trigger.Resync
		}
	case handler.DeleteEvent:
		t.Type, obj = trigger.Delete, e.Object
	case handler.GenericEvent:
		t.Type, obj = trigger.Generic, e.Object
	}
	if !handler.IsNil(obj) {
		t.Object = obj
		if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
			t.Source = k
		}
	}
	return t
}
