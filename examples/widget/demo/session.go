package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller/controllerutil"
	"kloop.dev/kloop/examples/cloud"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/internal/controller"
)

// session is the scripted part of the demo: what a user of the operator
// does, and the checks of what it converged to.
type session struct {
	c     *client.Client // the administrator's, uncached
	ns    string
	p     *printer
	view  *widgetView
	cloud *cloud.Cloud

	expected map[string]bool // the Widgets that should exist, by name
}

const setName = "fleet"

var demoSpec = examplev1.WidgetSpec{Region: "local-1", Size: "small", Tags: map[string]string{"demo": "kloop"}}

func soloName(i int) string { return fmt.Sprintf("solo-%d", i) }

// run creates the Widgets, waits for them, changes and deletes some, and
// waits again.
func (s *session) run(ctx context.Context, n int) error {
	fleet, solos := n/2, n-n/2
	s.expected = map[string]bool{}
	s.p.line("creating WidgetSet %s (%d replicas) and %d Widgets solo-0 … solo-%d", setName, fleet, solos, solos-1)
	replicas := int32(fleet)
	set := &examplev1.WidgetSet{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: setName}, Spec: examplev1.WidgetSetSpec{
		Replicas: &replicas,
		Template: examplev1.WidgetTemplate{Metadata: examplev1.WidgetTemplateMeta{Labels: map[string]string{"app": setName}}, Spec: demoSpec},
	}}
	if err := s.c.Create(ctx, set); err != nil {
		return err
	}
	for i := range fleet {
		s.expected[controller.ChildName(setName, i)] = true
	}
	if err := parallel(solos, func(i int) error {
		w := &examplev1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: soloName(i)}, Spec: *demoSpec.DeepCopy()}
		return s.c.Create(ctx, w)
	}); err != nil {
		return err
	}
	for i := range solos {
		s.expected[soloName(i)] = true
	}
	if err := s.wait(ctx, fmt.Sprintf("all %d Widgets Running", n)); err != nil {
		return err
	}
	s.p.line("all %d Widgets Running", n)

	// Changes: some resized, some deleted, the set scaled up by as many.
	del, resize := min(5, solos/4), min(10, solos/4)
	if err := parallel(resize, func(i int) error {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"size":"large"}}`))
		return s.c.Patch(ctx, &examplev1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: soloName(del + i)}}, patch)
	}); err != nil {
		return err
	}
	if err := parallel(del, func(i int) error {
		return s.c.Delete(ctx, &examplev1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: soloName(i)}})
	}); err != nil {
		return err
	}
	for i := range del {
		delete(s.expected, soloName(i))
	}
	if del > 0 {
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, fleet+del))
		if err := s.c.Patch(ctx, &examplev1.WidgetSet{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: setName}}, patch); err != nil {
			return err
		}
		for i := range fleet + del {
			s.expected[controller.ChildName(setName, i)] = true
		}
	}
	s.p.line("resized %d Widgets to large, deleted %d (their finalizers delete the instances), scaled %s to %d", resize, del, setName, fleet+del)
	if err := s.wait(ctx, fmt.Sprintf("the %d Widgets Running again", n)); err != nil {
		return err
	}
	return nil
}

// wait waits until the Widgets the view shows are the expected ones, each
// Running at its generation, and the cloud holds as many instances.
func (s *session) wait(ctx context.Context, what string) error {
	var last error
	for {
		if last = s.converged(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (%v)", what, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *session) converged() error {
	snap := s.view.snapshot()
	running, missing, extra := 0, 0, 0
	for name := range s.expected {
		st, ok := snap[name]
		switch {
		case !ok:
			missing++
		case !st.deleting && st.current && st.state == examplev1.StateRunning:
			running++
		}
	}
	for name := range snap {
		if !s.expected[name] {
			extra++
		}
	}
	live := s.cloud.Stats().Live
	if running != len(s.expected) || extra != 0 || live != int64(len(s.expected)) {
		return fmt.Errorf("%d of %d Running, %d not created yet, %d still to go, %d instances live", running, len(s.expected), missing, extra, live)
	}
	return nil
}

// summary is the end state, checked against the API server and the cloud.
type summary struct {
	widgets, running, instances, leaked, duplicated, wrongSize int
}

func (s summary) String() string {
	out := fmt.Sprintf("%d widgets Running, %d instances in the cloud, %d leaked, %d duplicated", s.running, s.instances, s.leaked, s.duplicated)
	if s.running != s.widgets {
		out += fmt.Sprintf(" (of %d widgets)", s.widgets)
	}
	if s.wrongSize != 0 {
		out += fmt.Sprintf(", %d of another size than their spec", s.wrongSize)
	}
	return out
}

// verify reads the Widgets from the API server and the instances from the
// cloud's own records (visible or not).
func (s *session) verify(ctx context.Context) (summary, error) {
	var l examplev1.WidgetList
	if err := s.c.List(ctx, &l, client.InNamespace(s.ns)); err != nil {
		return summary{}, err
	}
	sum := summary{widgets: len(l.Items)}
	byUID := map[types.UID]*examplev1.Widget{}
	for i := range l.Items {
		w := &l.Items[i]
		byUID[w.UID] = w
		if w.Status.State == examplev1.StateRunning && w.Status.ObservedGeneration == w.Generation {
			sum.running++
		}
	}
	perWidget := map[types.UID]int{}
	for _, in := range s.cloud.Instances() {
		if !in.Live() {
			continue
		}
		sum.instances++
		uid := types.UID(in.Tags[controller.TagUID])
		w, ok := byUID[uid]
		if !ok {
			sum.leaked++
			continue
		}
		perWidget[uid]++
		if in.Size != w.Spec.Size {
			sum.wrongSize++
		}
	}
	for _, n := range perWidget {
		sum.duplicated += n - 1
	}
	return sum, nil
}

// cleanup deletes the demo's objects from a cluster, the instances with
// them, then its namespace.
func (s *session) cleanup(ctx context.Context) error {
	bg := client.PropagationPolicy(metav1.DeletePropagationBackground)
	if err := s.c.Delete(ctx, &examplev1.WidgetSet{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: setName}}, bg); client.IgnoreNotFound(err) != nil {
		return err
	}
	var l examplev1.WidgetList
	if err := s.c.List(ctx, &l, client.InNamespace(s.ns)); err != nil {
		return err
	}
	for i := range l.Items {
		if err := s.c.Delete(ctx, &l.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	s.expected = map[string]bool{}
	for {
		var left examplev1.WidgetList
		if err := s.c.List(ctx, &left, client.InNamespace(s.ns)); err != nil {
			return err
		}
		if len(left.Items) == 0 && s.cloud.Stats().Live == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d Widgets left: %w", len(left.Items), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return s.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})
}

// parallel calls fn(0) … fn(n-1) from 8 goroutines.
func parallel(n int, fn func(i int) error) error {
	const workers = 8
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// abandon is the way out of a demo on a real cluster that did not end
// well (a timeout, an error, an interrupt): the operator and the cloud,
// which live in this process, are going, and with them every instance,
// so it removes the Widgets' finalizers, which nothing could clear after,
// and deletes the namespace.
func (s *session) abandon(ctx context.Context) error {
	var l examplev1.WidgetList
	if err := s.c.List(ctx, &l, client.InNamespace(s.ns)); err != nil {
		return err
	}
	var errs []error
	for i := range l.Items {
		w := &l.Items[i]
		if !controllerutil.ContainsFinalizer(w, controller.Finalizer) {
			continue
		}
		controllerutil.RemoveFinalizer(w, controller.Finalizer)
		if err := s.c.Update(ctx, w); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("widget %s: %w", w.Name, err))
		}
	}
	err := s.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})
	return errors.Join(append(errs, client.IgnoreNotFound(err))...)
}
