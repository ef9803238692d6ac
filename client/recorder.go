package client

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// RecorderOptions configures a Recorder. The zero value works.
type RecorderOptions struct {
	// Host is the events' source.host and reportingInstance. Default "",
	// as controller-runtime's recorders leave it.
	Host string
	// Buffer is the number of events that may wait to be written; an event
	// recorded while it is full is dropped (and logged), so recording never
	// blocks a reconcile. Default 2000, as much as client-go's broadcaster
	// holds for its one sink: 1,000 events in its incoming queue and 1,000
	// in the sink watcher's.
	Buffer int
	// Burst and Refill are the spam filter, per involved object and
	// source: Burst events at once, then one per Refill. Events beyond are
	// dropped. Default 25 and 5 minutes, as client-go's.
	Burst  int
	Refill time.Duration
	// Logger receives what is dropped and why. Default: slog.Default().
	Logger *slog.Logger
}

func (o *RecorderOptions) setDefaults() {
	if o.Buffer == 0 {
		o.Buffer = 2000
	}
	if o.Burst == 0 {
		o.Burst = 25
	}
	if o.Refill == 0 {
		o.Refill = 5 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

func (o *RecorderOptions) validate() error {
	var errs []error
	if o.Buffer < 0 {
		errs = append(errs, fmt.Errorf("Buffer %d is negative", o.Buffer))
	}
	if o.Burst < 0 {
		errs = append(errs, fmt.Errorf("Burst %d is negative", o.Burst))
	}
	if o.Refill < 0 {
		errs = append(errs, fmt.Errorf("Refill %s is negative", o.Refill))
	}
	return errors.Join(errs...)
}

// Sizes of a Recorder's memory of recent events and of its spam filter
// (client-go's maxLruCacheEntries).
const recorderCacheSize = 4096

// Retries of an event write that failed for a reason other than the
// server's refusal (client-go's maxTriesPerEvent), and the wait between
// tries (about client-go's 10 s, with jitter).
const (
	recorderTries = 12
	recorderRetry = 10 * time.Second
)

// Recorder records Kubernetes Events about objects, as client-go's
// EventRecorder (what controller-runtime's manager hands out): core/v1
// Events in the object's namespace ("default" for cluster-scoped objects)
// with the object as involvedObject and the component as source, shown by
// `kubectl describe` and `kubectl get events`.
//
// Recording never blocks and never fails the caller: events are written by
// Start's goroutine, in order. An event equal to a recent one (same object,
// type, reason and message) is not written again: the existing Event's count
// and lastTimestamp are patched, as client-go does; from the tenth distinct
// message of similar events (same object, type and reason) within 10
// minutes, they are written as one Event "(combined from similar events):
// <message>", as client-go's EventAggregator does. A spam filter caps the
// events of one object (Burst, then one per Refill), so that a controller in
// a hot loop cannot flood the API server. Writes go through the Client, so
// they share its rate limit.
type Recorder struct {
	c         *Client
	component string
	opts      RecorderOptions
	queue     chan *corev1.Event
	running   atomic.Bool // Start is running

	mu sync.Mutex // guards seen, spam and similar
	// seen remembers the last Event written for each recent event key, so
	// that a repeat patches it; spam holds each recent object's filter;
	// similar the messages of each recent object, type and reason (see
	// aggregate). All forget their least recently used entries beyond
	// recorderCacheSize, as client-go's LRU caches: an object in a hot loop
	// keeps its filter.
	seen    lru[*seenEvent]
	spam    lru[*rate.Limiter]
	similar lru[*similarEvents]
}

// similarEvents are the distinct messages recently recorded with one
// object, type and reason.
type similarEvents struct {
	messages map[string]struct{}
	last     time.Time // when the last of them was recorded
}

// Aggregation of similar events, as client-go's EventAggregator: from the
// aggregateMax-th distinct message recorded within aggregateWindow with the
// same object, type and reason, the events are written as one Event.
const (
	aggregateMax    = 10
	aggregateWindow = 10 * time.Minute
)

// seenEvent is what a Recorder remembers of an Event it wrote.
type seenEvent struct {
	name, namespace string
	count           int32
	first           metav1.Time
}

// NewRecorder returns a Recorder of events from component (the source
// controller's name, such as "widget-controller"), written with c. Run
// Start to write them; events recorded before are kept until then (up to
// Options.Buffer).
func NewRecorder(c *Client, component string, opts RecorderOptions) (*Recorder, error) {
	if c == nil {
		return nil, errors.New("client: NewRecorder needs a Client")
	}
	if component == "" {
		return nil, errors.New("client: NewRecorder needs a component name")
	}
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("client: recorder %q: invalid options: %w", component, err)
	}
	return &Recorder{
		c:         c,
		component: component,
		opts:      opts,
		queue:     make(chan *corev1.Event, opts.Buffer),
	}, nil
}

// Event records an event about obj: eventType is corev1.EventTypeNormal or
// corev1.EventTypeWarning, reason a short UpperCamelCase word that machines
// can match on ("Created", "FailedSync"), message what a person reads. An
// event that cannot be recorded (an object without a name or kind, an
// invalid type, an empty reason, a full buffer, the spam filter) is logged
// and dropped.
func (r *Recorder) Event(obj runtime.Object, eventType, reason, message string) {
	ev, err := r.makeEvent(obj, eventType, reason, message)
	if err != nil {
		r.opts.Logger.Warn("recorder: event dropped", "component", r.component, "reason", reason, "err", err)
		return
	}
	if !r.allow(ev) {
		r.opts.Logger.Debug("recorder: event dropped by the spam filter", "component", r.component,
			"object", ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name, "reason", reason)
		return
	}
	select {
	case r.queue <- ev:
	default:
		r.opts.Logger.Warn("recorder: buffer full, event dropped", "component", r.component,
			"object", ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name, "reason", reason)
	}
}

// Eventf is Event with a message made by fmt.Sprintf(messageFmt, args...).
func (r *Recorder) Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any) {
	r.Event(obj, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

// Start writes the recorded events until ctx is cancelled, then returns
// nil; events still waiting are dropped. A Recorder runs one Start at a
// time (its events are written in order).
func (r *Recorder) Start(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return fmt.Errorf("client: recorder %q is running already", r.component)
	}
	defer r.running.Store(false)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-r.queue:
			r.write(ctx, ev)
		}
	}
}

// NeedLeaderElection returns false: every replica records its own events
// (a manager asks).
func (r *Recorder) NeedLeaderElection() bool { return false }

func (r *Recorder) makeEvent(obj runtime.Object, eventType, reason, message string) (*corev1.Event, error) {
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		return nil, fmt.Errorf("event type %q is neither %q nor %q", eventType, corev1.EventTypeNormal, corev1.EventTypeWarning)
	}
	if reason == "" {
		return nil, errors.New("event without a reason")
	}
	if isNil(obj) {
		return nil, fmt.Errorf("event about a nil object (%T)", obj)
	}
	ref, err := r.reference(obj)
	if err != nil {
		return nil, err
	}
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ref.Name + "." + strconv.FormatInt(now.UnixNano(), 16),
			Namespace: ns,
		},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Type:                eventType,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Source:              corev1.EventSource{Component: r.component, Host: r.opts.Host},
		ReportingController: r.component,
		ReportingInstance:   r.opts.Host,
	}, nil
}

// reference is obj's ObjectReference, with its kind from the object or the
// Client's scheme.
func (r *Recorder) reference(obj runtime.Object) (corev1.ObjectReference, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return corev1.ObjectReference{}, fmt.Errorf("event about %T: %w", obj, err)
	}
	if m.GetName() == "" {
		return corev1.ObjectReference{}, fmt.Errorf("event about a %T without a name", obj)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		if gvk, err = r.c.gvkFor(obj); err != nil {
			return corev1.ObjectReference{}, fmt.Errorf("event about %s: %w", m.GetName(), err)
		}
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return corev1.ObjectReference{
		Kind:            kind,
		APIVersion:      apiVersion,
		Namespace:       m.GetNamespace(),
		Name:            m.GetName(),
		UID:             m.GetUID(),
		ResourceVersion: m.GetResourceVersion(),
	}, nil
}

// allow applies the spam filter of ev's object and source.
func (r *Recorder) allow(ev *corev1.Event) bool {
	o := ev.InvolvedObject
	key := ev.Source.Component + "\x00" + ev.Source.Host + "\x00" + o.Kind + "\x00" + o.Namespace + "\x00" + o.Name + "\x00" + string(o.UID) + "\x00" + o.APIVersion
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.spam.get(key)
	if !ok {
		every := rate.Inf
		if r.opts.Refill > 0 {
			every = rate.Every(r.opts.Refill)
		}
		l = rate.NewLimiter(every, r.opts.Burst)
		r.spam.put(key, l)
	}
	return l.Allow()
}

// lru maps up to recorderCacheSize keys to values; adding one more forgets
// the least recently used (got or put). The zero value is empty.
type lru[V any] struct {
	m     map[string]*list.Element // each holds an *lruEntry[V]
	order list.List                // most recently used first
}

type lruEntry[V any] struct {
	key string
	val V
}

// get returns the value of key and marks it used.
func (c *lru[V]) get(key string) (V, bool) {
	e, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).val, true
}

// put sets the value of key and marks it used.
func (c *lru[V]) put(key string, val V) {
	if e, ok := c.m[key]; ok {
		e.Value.(*lruEntry[V]).val = val
		c.order.MoveToFront(e)
		return
	}
	if c.m == nil {
		c.m = map[string]*list.Element{}
	}
	c.m[key] = c.order.PushFront(&lruEntry[V]{key: key, val: val})
	if c.order.Len() > recorderCacheSize {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.m, oldest.Value.(*lruEntry[V]).key)
	}
}

// eventKey identifies the events that are the same event repeated.
func eventKey(ev *corev1.Event) string {
	o := ev.InvolvedObject
	return ev.Source.Component + "\x00" + ev.Source.Host + "\x00" + o.Kind + "\x00" + o.Namespace + "\x00" + o.Name +
		"\x00" + string(o.UID) + "\x00" + o.APIVersion + "\x00" + ev.Type + "\x00" + ev.Reason + "\x00" + ev.Message
}

// aggregateKey identifies the events that are similar: the same but for
// their message. Its leading "\x01" keeps it apart from every eventKey.
func aggregateKey(ev *corev1.Event) string {
	o := ev.InvolvedObject
	return "\x01" + ev.Source.Component + "\x00" + ev.Source.Host + "\x00" + o.Kind + "\x00" + o.Namespace + "\x00" + o.Name +
		"\x00" + string(o.UID) + "\x00" + o.APIVersion + "\x00" + ev.Type + "\x00" + ev.Reason + "\x00" + ev.ReportingController
}

// aggregate returns the key under which ev is written (the same key means
// the same Event, counted): its own key, until aggregateMax distinct
// messages of similar events came within aggregateWindow; then, as
// client-go's EventAggregator, the similar events' key, with ev's message
// prefixed "(combined from similar events): ", so that a controller that
// varies its message (a timestamp, an error text) makes one Event, not one
// per message. r.mu is held.
func (r *Recorder) aggregate(ev *corev1.Event) string {
	akey := aggregateKey(ev)
	now := ev.LastTimestamp.Time
	e, ok := r.similar.get(akey)
	if !ok || now.Sub(e.last) > aggregateWindow {
		e = &similarEvents{messages: map[string]struct{}{}}
		r.similar.put(akey, e)
	}
	e.last = now
	e.messages[ev.Message] = struct{}{}
	if len(e.messages) < aggregateMax {
		return eventKey(ev)
	}
	for m := range e.messages { // keep the set bounded, as client-go's PopAny
		if m != ev.Message {
			delete(e.messages, m)
			break
		}
	}
	ev.Message = "(combined from similar events): " + ev.Message
	return akey
}

// write writes ev: a patch of the Event it repeats, or a new Event; it
// retries what failed for a reason other than the server's refusal.
func (r *Recorder) write(ctx context.Context, ev *corev1.Event) {
	r.mu.Lock()
	key := r.aggregate(ev)
	prev, _ := r.seen.get(key)
	var repeat seenEvent
	if prev != nil {
		repeat = *prev
	}
	r.mu.Unlock()
	for try := 1; ; try++ {
		var err error
		var written *corev1.Event
		if prev != nil {
			written, err = r.patch(ctx, ev, repeat)
			if apierrors.IsNotFound(err) { // deleted meanwhile: write it anew
				prev = nil
				written, err = r.create(ctx, ev)
			}
		} else {
			written, err = r.create(ctx, ev)
		}
		if err == nil {
			r.mu.Lock()
			r.seen.put(key, &seenEvent{name: written.Name, namespace: written.Namespace, count: written.Count, first: written.FirstTimestamp})
			r.mu.Unlock()
			return
		}
		if !retriable(err) || try == recorderTries || ctx.Err() != nil {
			r.opts.Logger.Warn("recorder: event not written", "component", r.component,
				"object", ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name, "reason", ev.Reason, "tries", try, "err", err)
			return
		}
		wait := recorderRetry/2 + rand.N(recorderRetry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (r *Recorder) create(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	out := ev.DeepCopy()
	if err := r.c.Create(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// patch counts ev as one more occurrence of the Event it repeats.
func (r *Recorder) patch(ctx context.Context, ev *corev1.Event, prev seenEvent) (*corev1.Event, error) {
	body, err := json.Marshal(map[string]any{
		"count":         prev.count + 1,
		"lastTimestamp": ev.LastTimestamp,
		"message":       ev.Message,
	})
	if err != nil {
		return nil, fmt.Errorf("client: recorder: %w", err)
	}
	out := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: prev.namespace, Name: prev.name}}
	if err := r.c.Patch(ctx, out, RawPatch(types.StrategicMergePatchType, body)); err != nil {
		return nil, err
	}
	return out, nil
}

// retriable reports whether a failed event write may succeed if tried
// again: not when the server refused it (as client-go's recorder, which
// retries only errors that are not API statuses), except for the statuses
// that say "later" (429, 503, 504, ServerTimeout); not when the context
// ended. A 500 is a refusal: kube-apiserver answers 500 to an Event too
// large for etcd, and retrying it would hold up every event recorded after
// it for minutes.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
			apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err)
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
