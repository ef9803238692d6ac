package reflector_test

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"kloop.dev/kloop/reflector"
)

// memoryLW is a ListerWatcher over a fixed list and a channel of events:
// the whole interface a test double needs.
type memoryLW struct {
	list   reflector.List[*corev1.Pod]
	events chan reflector.Event[*corev1.Pod]
}

func (m *memoryLW) List(ctx context.Context, opts metav1.ListOptions) (*reflector.List[*corev1.Pod], error) {
	fmt.Printf("list resourceVersion=%q limit=%d\n", opts.ResourceVersion, opts.Limit)
	return &m.list, nil
}

func (m *memoryLW) Watch(ctx context.Context, opts metav1.ListOptions) (reflector.Watch[*corev1.Pod], error) {
	fmt.Printf("watch resourceVersion=%q bookmarks=%t\n", opts.ResourceVersion, opts.AllowWatchBookmarks)
	return &chanWatch{ctx: ctx, events: m.events}, nil
}

type chanWatch struct {
	ctx    context.Context
	events chan reflector.Event[*corev1.Pod]
}

func (w *chanWatch) Next() (reflector.Event[*corev1.Pod], error) {
	select {
	case ev, ok := <-w.events:
		if !ok {
			return ev, io.EOF
		}
		return ev, nil
	case <-w.ctx.Done():
		return reflector.Event[*corev1.Pod]{}, w.ctx.Err()
	}
}

func (w *chanWatch) Stop() {}

// printStore prints what the reflector pushes and cancels after n calls.
type printStore struct {
	n      int
	cancel context.CancelFunc
}

func (s *printStore) done() error {
	if s.n--; s.n == 0 {
		s.cancel()
	}
	return nil
}
func (s *printStore) Add(p *corev1.Pod) error    { fmt.Println("add", p.Name); return s.done() }
func (s *printStore) Update(p *corev1.Pod) error { fmt.Println("update", p.Name); return s.done() }
func (s *printStore) Delete(p *corev1.Pod) error { fmt.Println("delete", p.Name); return s.done() }
func (s *printStore) Bookmark(rv string) error   { fmt.Println("bookmark", rv); return s.done() }
func (s *printStore) Replace(ps []*corev1.Pod, rv string) error {
	fmt.Println("replace", len(ps), "objects at", rv)
	return s.done()
}

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
}

// A reflector lists, then watches from the list's resourceVersion, and
// pushes each change into its store.
func Example() {
	lw := &memoryLW{
		list:   reflector.List[*corev1.Pod]{Items: []*corev1.Pod{pod("a", "1"), pod("b", "2")}, ResourceVersion: "10"},
		events: make(chan reflector.Event[*corev1.Pod], 3),
	}
	lw.events <- reflector.Event[*corev1.Pod]{Type: watch.Added, Object: pod("c", "11")}
	lw.events <- reflector.Event[*corev1.Pod]{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "15"}}}
	lw.events <- reflector.Event[*corev1.Pod]{Type: watch.Deleted, Object: pod("a", "16")}

	ctx, cancel := context.WithCancel(context.Background())
	store := &printStore{n: 4, cancel: cancel}
	r, err := reflector.New[*corev1.Pod](lw, store, reflector.Options{DisableWatchList: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = r.Run(ctx) // returns once the store has cancelled ctx
	fmt.Println("synced:", r.HasSynced(), "at", r.LastSyncResourceVersion())
	// Output:
	// list resourceVersion="0" limit=500
	// replace 2 objects at 10
	// watch resourceVersion="10" bookmarks=true
	// add c
	// bookmark 15
	// delete a
	// synced: true at 16
}
