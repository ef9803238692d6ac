package informer_test

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/reflector"
)

// staticLW lists fixed objects and then streams the events of a channel.
type staticLW struct {
	items  []*corev1.Pod
	events chan reflector.Event[*corev1.Pod]
}

func (s *staticLW) List(context.Context, metav1.ListOptions) (*reflector.List[*corev1.Pod], error) {
	return &reflector.List[*corev1.Pod]{Items: s.items, ResourceVersion: "10"}, nil
}

func (s *staticLW) Watch(ctx context.Context, _ metav1.ListOptions) (reflector.Watch[*corev1.Pod], error) {
	return chanWatch{ctx, s.events}, nil
}

type chanWatch struct {
	ctx    context.Context
	events chan reflector.Event[*corev1.Pod]
}

func (w chanWatch) Next() (reflector.Event[*corev1.Pod], error) {
	select {
	case ev := <-w.events:
		return ev, nil
	case <-w.ctx.Done():
		return reflector.Event[*corev1.Pod]{}, io.EOF
	}
}
func (chanWatch) Stop() {}

func mkPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
}

// An informer lists, watches, keeps its cache and tells the handler; the
// handler reads the cache, which already holds the event's object.
func Example() {
	lw := &staticLW{items: []*corev1.Pod{mkPod("web-1", "5")}, events: make(chan reflector.Event[*corev1.Pod])}

	pods, err := informer.New[*corev1.Pod](lw, informer.Options[*corev1.Pod]{
		Reflector: reflector.Options{DisableWatchList: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	told := make(chan struct{})
	_, err = pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initialList bool) {
			_, cached := pods.Get(p.Namespace, p.Name)
			fmt.Printf("add %s initialList=%t cached=%t\n", p.Name, initialList, cached)
			told <- struct{}{}
		},
		DeleteFunc: func(d informer.Deleted[*corev1.Pod]) {
			_, cached := pods.GetByKey(d.Key)
			fmt.Printf("delete %s finalStateUnknown=%t cached=%t\n", d.Key, d.FinalStateUnknown, cached)
			told <- struct{}{}
		},
	}, informer.HandlerOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	<-told // the initial list
	lw.events <- reflector.Event[*corev1.Pod]{Type: watch.Added, Object: mkPod("web-2", "11")}
	<-told
	lw.events <- reflector.Event[*corev1.Pod]{Type: watch.Deleted, Object: mkPod("web-1", "12")}
	<-told
	cancel()
	fmt.Println("run:", <-done, "cached:", pods.Len())
	// Output:
	// add web-1 initialList=true cached=true
	// add web-2 initialList=false cached=true
	// delete default/web-1 finalStateUnknown=false cached=false
	// run: <nil> cached: 1
}
