package informer

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"kloop.dev/kloop/reflector"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeServer is an in-memory API server for one resource: a
// ListerWatcher whose state tests change with create, update and remove
// (sent to the open watch) or, inside a gap, silently (as if the watch
// were down), and whose watch can be broken with 410 Gone.
type fakeServer struct {
	mu    sync.Mutex // guards every field
	rv    int
	objs  map[string]*corev1.Pod
	watch *fakeWatch
	lists int
	// watchOpened is signalled each time a watch is opened.
	watchOpened chan struct{}
}

func newFakeServer(pods ...*corev1.Pod) *fakeServer {
	s := &fakeServer{objs: map[string]*corev1.Pod{}, watchOpened: make(chan struct{}, 100)}
	for _, p := range pods {
		s.rv++
		p = p.DeepCopy()
		p.ResourceVersion = strconv.Itoa(s.rv)
		s.objs[p.Namespace+"/"+p.Name] = p
	}
	return s
}

func (s *fakeServer) List(ctx context.Context, opts metav1.ListOptions) (*reflector.List[*corev1.Pod], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	keys := make([]string, 0, len(s.objs))
	for k := range s.objs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	l := &reflector.List[*corev1.Pod]{ResourceVersion: strconv.Itoa(s.rv)}
	for _, k := range keys {
		l.Items = append(l.Items, s.objs[k].DeepCopy())
	}
	return l, nil
}

func (s *fakeServer) Watch(ctx context.Context, opts metav1.ListOptions) (reflector.Watch[*corev1.Pod], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != nil {
		s.watch.Stop()
	}
	w := &fakeWatch{ctx: ctx, ch: make(chan reflector.Event[*corev1.Pod], 1<<16), stop: make(chan struct{})}
	s.watch = w
	select {
	case s.watchOpened <- struct{}{}:
	default:
	}
	return w, nil
}

// send queues ev on the open watch, if any (s.mu held).
func (s *fakeServer) sendLocked(t watch.EventType, p *corev1.Pod) {
	if s.watch != nil {
		s.watch.ch <- reflector.Event[*corev1.Pod]{Type: t, Object: p.DeepCopy()}
	}
}

func (s *fakeServer) create(p *corev1.Pod) { s.change(watch.Added, p, true) }
func (s *fakeServer) update(p *corev1.Pod) { s.change(watch.Modified, p, true) }
func (s *fakeServer) remove(p *corev1.Pod) { s.change(watch.Deleted, p, true) }

// change applies a change; the watch hears of it only if send.
func (s *fakeServer) change(t watch.EventType, p *corev1.Pod, send bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	p = p.DeepCopy()
	p.ResourceVersion = strconv.Itoa(s.rv)
	key := p.Namespace + "/" + p.Name
	if t == watch.Deleted {
		delete(s.objs, key)
	} else {
		s.objs[key] = p
	}
	if send {
		s.sendLocked(t, p)
	}
}

// gone ends the open watch with a 410 Gone ERROR event: the reflector must
// relist.
func (s *fakeServer) gone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != nil {
		s.watch.ch <- reflector.Event[*corev1.Pod]{Type: watch.Error, Status: &metav1.Status{
			Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}}
		s.watch = nil
	}
}

// churn makes change i of a churn over the pods p0…p(keys-1): an add, an
// update or a deletion in turn. With beforeRelist, one deletion in nine is
// never sent to the watch: the relist to come must find it.
func (s *fakeServer) churn(i, keys int, beforeRelist bool) {
	switch i % 3 {
	case 0:
		s.change("ADDED", pod(fmt.Sprint("p", i%keys)), true)
	case 1:
		s.change("MODIFIED", pod(fmt.Sprint("p", i%keys), "i", fmt.Sprint(i)), true)
	case 2:
		s.change("DELETED", pod(fmt.Sprint("p", (i+7)%keys)), !beforeRelist || i%9 != 2)
	}
}

func (s *fakeServer) state() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, p := range s.objs {
		out[k] = p.ResourceVersion
	}
	return out
}

type fakeWatch struct {
	ctx      context.Context
	ch       chan reflector.Event[*corev1.Pod]
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *fakeWatch) Next() (reflector.Event[*corev1.Pod], error) {
	select {
	case ev := <-w.ch:
		return ev, nil
	case <-w.stop:
		return reflector.Event[*corev1.Pod]{}, io.EOF
	case <-w.ctx.Done():
		return reflector.Event[*corev1.Pod]{}, w.ctx.Err()
	}
}

func (w *fakeWatch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

func pod(name string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if len(labels) > 0 {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
	}
	return p
}

// recorder is a Handler of Pods that records what it is told, as text.
type recorder = recorderOf[*corev1.Pod]

func newRecorder() *recorder { return newRecorderOf[*corev1.Pod]() }

// recorderOf is a Handler that records what it is told, as text.
type recorderOf[T Object] struct {
	mu     sync.Mutex // guards events
	events []string
	signal chan struct{}
	// check, if set, runs inside each call (before recording); obj is
	// nil-valued for a tombstone without an object.
	check func(event string, obj T)
}

func newRecorderOf[T Object]() *recorderOf[T] { return &recorderOf[T]{signal: make(chan struct{}, 1)} }

func (r *recorderOf[T]) record(ev string, obj T) {
	if r.check != nil {
		r.check(ev, obj)
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

func (r *recorderOf[T]) OnAdd(p T, initial bool) {
	r.record(fmt.Sprintf("add %s@%s initial=%t", p.GetName(), p.GetResourceVersion(), initial), p)
}

// OnUpdate records "update name@old->new", with " deleting" appended when
// the new version has a deletionTimestamp.
func (r *recorderOf[T]) OnUpdate(old, p T) {
	deleting := ""
	if p.GetDeletionTimestamp() != nil {
		deleting = " deleting"
	}
	r.record(fmt.Sprintf("update %s@%s->%s%s", p.GetName(), old.GetResourceVersion(), p.GetResourceVersion(), deleting), p)
}

func (r *recorderOf[T]) OnDelete(d Deleted[T]) {
	rv := "?"
	if v := reflect.ValueOf(d.Object); v.IsValid() && !v.IsNil() {
		rv = d.Object.GetResourceVersion()
	}
	r.record(fmt.Sprintf("delete %s@%s unknown=%t", d.Key, rv, d.FinalStateUnknown), d.Object)
}

func (r *recorderOf[T]) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// waitUntil waits until the recorder's events satisfy cond, and returns them.
func (r *recorderOf[T]) waitUntil(t *testing.T, ctx context.Context, what string, cond func([]string) bool) []string {
	t.Helper()
	for {
		if ev := r.snapshot(); cond(ev) {
			return ev
		}
		select {
		case <-r.signal:
		case <-ctx.Done():
			t.Fatalf("waiting for %s, have %q", what, r.snapshot())
		}
	}
}

// waitFor waits until the recorder has n events.
func (r *recorderOf[T]) waitFor(t *testing.T, ctx context.Context, n int) []string {
	t.Helper()
	for {
		if ev := r.snapshot(); len(ev) >= n {
			return ev
		}
		select {
		case <-r.signal:
		case <-ctx.Done():
			t.Fatalf("waiting for %d events, have %q", n, r.snapshot())
		}
	}
}

// quickReflector relists without a long backoff in tests that run in real
// time.
var quickReflector = reflector.Options{DisableWatchList: true, InitialBackoff: 1e6, MaxBackoff: 1e7}

// start runs inf in the background and returns a stop func that cancels
// and waits for Run to return.
func start[T Object](t *testing.T, inf *Informer[T]) (context.Context, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		select {
		case <-ctx.Done():
		default:
			stop()
		}
	})
	return ctx, stop
}
