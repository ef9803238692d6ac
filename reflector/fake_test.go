package reflector

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// pod returns a Pod "ns/name" at resourceVersion rv.
func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// bookmark returns a bookmark object at rv; end marks the end of the
// initial events of a streaming list.
func bookmark(rv string, end bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	if end {
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return p
}

func added(name, rv string) Event[*corev1.Pod] {
	return Event[*corev1.Pod]{Type: watch.Added, Object: pod(name, rv)}
}
func modified(name, rv string) Event[*corev1.Pod] {
	return Event[*corev1.Pod]{Type: watch.Modified, Object: pod(name, rv)}
}
func deleted(name, rv string) Event[*corev1.Pod] {
	return Event[*corev1.Pod]{Type: watch.Deleted, Object: pod(name, rv)}
}
func bookmarkEv(rv string) Event[*corev1.Pod] {
	return Event[*corev1.Pod]{Type: watch.Bookmark, Object: bookmark(rv, false)}
}
func initialEnd(rv string) Event[*corev1.Pod] {
	return Event[*corev1.Pod]{Type: watch.Bookmark, Object: bookmark(rv, true)}
}
func errorEv(err *apierrors.StatusError) Event[*corev1.Pod] {
	st := err.Status()
	return Event[*corev1.Pod]{Type: watch.Error, Status: &st}
}

var podsGR = schema.GroupResource{Resource: "pods"}

func gone() *apierrors.StatusError {
	return apierrors.NewResourceExpired("too old resource version: 1 (5)")
}
func expiredContinue() *apierrors.StatusError {
	return apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
}
func tooLarge() *apierrors.StatusError {
	// What kube-apiserver's storage returns (a 504 Timeout with a cause).
	err := apierrors.NewTimeoutError("Too large resource version: 100, current: 50", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}
func tooMany(seconds int) *apierrors.StatusError {
	return apierrors.NewTooManyRequests("slow down", seconds)
}
func internal() *apierrors.StatusError {
	return apierrors.NewInternalError(fmt.Errorf("etcd unavailable"))
}
func invalidWatchList() *apierrors.StatusError {
	return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", nil)
}

// reply is the fake server's answer to one request, in script order.
type reply struct {
	// verb the request must have: "list" or "watch".
	verb string
	// err fails the request itself (HTTP error status).
	err error
	// list answers a list.
	list *List[*corev1.Pod]
	// events are streamed by a watch. Then the watch ends with end (io.EOF
	// when nil) after hold has elapsed, if close or hold or end is set;
	// otherwise it stays open (the last reply of a script then marks the
	// script exhausted).
	events []Event[*corev1.Pod]
	hold   time.Duration
	end    error
	close  bool
	// gap is waited before each event (a quiet stream between them).
	gap time.Duration
	// hang: the watch request is never answered; Watch blocks until its
	// ctx ends (a server that accepted the connection and went silent).
	hang bool
}

// fakeLW serves replies in order and records requests. When the script is
// exhausted it closes exhausted and blocks every further request (and the
// last watch once its events are read) until the request's ctx ends.
type fakeLW struct {
	t *testing.T

	mu        sync.Mutex // guards script, requests, exhausted, watches
	script    []reply
	requests  []string
	timeouts  []int64
	exhausted chan struct{}
	closed    bool
	// watches are the watches handed out, in order.
	watches []*fakeWatch
}

func newFakeLW(t *testing.T, script ...reply) *fakeLW {
	return &fakeLW{t: t, script: script, exhausted: make(chan struct{})}
}

// next pops the reply for a request, or returns false when exhausted.
func (f *fakeLW) next(verb string, opts metav1.ListOptions) (reply, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, verb+" "+formatOpts(opts))
	if opts.TimeoutSeconds != nil {
		f.timeouts = append(f.timeouts, *opts.TimeoutSeconds)
	}
	if len(f.script) == 0 {
		if !f.closed {
			f.closed = true
			close(f.exhausted)
		}
		return reply{}, false
	}
	r := f.script[0]
	f.script = f.script[1:]
	if r.verb != verb {
		f.t.Errorf("request %q, script expected a %s", verb+" "+formatOpts(opts), r.verb)
	}
	return r, true
}

func (f *fakeLW) List(ctx context.Context, opts metav1.ListOptions) (*List[*corev1.Pod], error) {
	r, ok := f.next("list", opts)
	if !ok {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, r.err
	}
	// Hand out copies so that a test's replies stay intact.
	l := *r.list
	l.Items = append([]*corev1.Pod(nil), r.list.Items...)
	return &l, nil
}

func (f *fakeLW) Watch(ctx context.Context, opts metav1.ListOptions) (Watch[*corev1.Pod], error) {
	r, ok := f.next("watch", opts)
	if !ok {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	w := &fakeWatch{f: f, ctx: ctx, events: r.events, hold: r.hold, end: r.end, gap: r.gap,
		open: !r.close && r.hold == 0 && r.end == nil, opened: time.Now()}
	f.mu.Lock()
	f.watches = append(f.watches, w)
	f.mu.Unlock()
	return w, nil
}

type fakeWatch struct {
	f       *fakeLW
	ctx     context.Context
	events  []Event[*corev1.Pod]
	hold    time.Duration
	gap     time.Duration
	end     error
	open    bool // after its events, blocks until ctx ends
	stopped bool
	// opened and stoppedAt are when Watch returned it and when it was
	// first stopped.
	opened, stoppedAt time.Time
}

func (w *fakeWatch) Next() (Event[*corev1.Pod], error) {
	if w.stopped {
		w.f.t.Error("Next after Stop")
		return Event[*corev1.Pod]{}, io.EOF
	}
	if err := w.ctx.Err(); err != nil {
		return Event[*corev1.Pod]{}, err
	}
	if len(w.events) > 0 && w.gap > 0 {
		select {
		case <-time.After(w.gap):
		case <-w.ctx.Done():
			return Event[*corev1.Pod]{}, w.ctx.Err()
		}
	}
	if len(w.events) > 0 {
		ev := w.events[0]
		w.events = w.events[1:]
		return ev, nil
	}
	if w.hold > 0 {
		select {
		case <-time.After(w.hold):
		case <-w.ctx.Done():
			return Event[*corev1.Pod]{}, w.ctx.Err()
		}
	}
	if w.open {
		w.f.mu.Lock()
		if len(w.f.script) == 0 && !w.f.closed {
			w.f.closed = true
			close(w.f.exhausted)
		}
		w.f.mu.Unlock()
		<-w.ctx.Done()
		return Event[*corev1.Pod]{}, w.ctx.Err()
	}
	if w.end != nil {
		return Event[*corev1.Pod]{}, w.end
	}
	return Event[*corev1.Pod]{}, io.EOF
}

func (w *fakeWatch) Stop() {
	if !w.stopped {
		w.stopped, w.stoppedAt = true, time.Now()
	}
}

func (f *fakeLW) transcript() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// formatOpts renders the options the reflector sets, compactly.
func formatOpts(o metav1.ListOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rv=%q", o.ResourceVersion)
	if o.ResourceVersionMatch != "" {
		fmt.Fprintf(&b, " match=%s", o.ResourceVersionMatch)
	}
	if o.Limit != 0 {
		fmt.Fprintf(&b, " limit=%d", o.Limit)
	}
	if o.Continue != "" {
		fmt.Fprintf(&b, " continue=%s", o.Continue)
	}
	if o.SendInitialEvents != nil {
		fmt.Fprintf(&b, " sendInitialEvents=%t", *o.SendInitialEvents)
	}
	if o.AllowWatchBookmarks {
		b.WriteString(" bookmarks")
	}
	return b.String()
}

// recStore records the calls the reflector makes.
type recStore struct {
	mu      sync.Mutex // guards calls
	calls   []string
	fail    error         // returned by every call when set
	changed chan struct{} // if not nil, signalled (without blocking) on each call
	// onReplace, if not nil, is called at the start of each Replace.
	onReplace func(rv string)
	// onEvent, if not nil, is called at the start of each Add, Update,
	// Delete and Bookmark.
	onEvent func()
}

// waitFor waits until the store has recorded n calls or 10 s have passed.
func (s *recStore) waitFor(n int) {
	timeout := time.After(10 * time.Second)
	for len(s.transcript()) < n {
		select {
		case <-s.changed:
		case <-timeout:
			return
		}
	}
}

func objs(ps []*corev1.Pod) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Name + "@" + p.ResourceVersion
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func (s *recStore) rec(c string) error {
	if s.onEvent != nil && !strings.HasPrefix(c, "Replace ") {
		s.onEvent()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	if s.changed != nil {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	return s.fail
}
func (s *recStore) Add(o *corev1.Pod) error { return s.rec("Add " + o.Name + "@" + o.ResourceVersion) }
func (s *recStore) Update(o *corev1.Pod) error {
	return s.rec("Update " + o.Name + "@" + o.ResourceVersion)
}
func (s *recStore) Delete(o *corev1.Pod) error {
	return s.rec("Delete " + o.Name + "@" + o.ResourceVersion)
}
func (s *recStore) Replace(ps []*corev1.Pod, rv string) error {
	if s.onReplace != nil {
		s.onReplace(rv)
	}
	return s.rec("Replace " + rv + " [" + objs(ps) + "]")
}
func (s *recStore) Bookmark(rv string) error { return s.rec("Bookmark " + rv) }

func (s *recStore) transcript() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func podList(rv, cont string, ps ...*corev1.Pod) *List[*corev1.Pod] {
	return &List[*corev1.Pod]{Items: ps, ResourceVersion: rv, Continue: cont}
}
