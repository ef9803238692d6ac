package builder_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/reconcile"
)

// userKey is the context key of a value the test's own BaseContext adds.
type userKey struct{}

// scopedView is what a scoped controller's reconciles saw, per object name.
type scopedView struct {
	mu       sync.Mutex        // guards the fields below
	data     map[string]string // the "i" entry of the last Get
	rv       map[string]string // the resourceVersion of the last Get
	probes   []string          // one line per reconcile of "probe": what its reads answered
	handlerC []string          // one line per map func call: what its reads answered
}

func (v *scopedView) last(name string) (data, rv string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.data[name], v.rv[name]
}

func (v *scopedView) lines(of *[]string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(*of)
}

// outcome names the answer of a read for the test's comparisons.
func outcome(err error) string {
	switch {
	case err == nil:
		return "found"
	case apierrors.IsNotFound(err):
		return "NotFound"
	case errors.Is(err, client.ErrOutOfScope):
		return "ErrOutOfScope"
	default:
		return err.Error()
	}
}

// A controller whose For has a scope reads that kind, through the manager's
// client, from the scoped informer that wakes it: after a burst of updates
// its last reconcile sees the last version; no whole-kind informer is ever
// started; an object the selector excludes is NotFound, one in another
// namespace ErrOutOfScope, inside reconciles and map
// functions, and found with a context of its own (which starts the
// whole-kind informer, which the reconciles still do not read); an object
// that leaves the scope is gone for the controller.
func TestScopedReadsInReconcile(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ns := env.Namespace
		mgr := newManager(t, env)
		c := mgr.Client()
		other := unique("elsewhere")
		create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})
		in := map[string]string{"kloop-scope": "in"}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Labels: in}, Data: map[string]string{"i": "-"}}
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe", Labels: in}, Data: map[string]string{"n": "0"}}
		for _, o := range []*corev1.ConfigMap{
			cm, probe,
			{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabeled"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "elsewhere", Labels: in}},
		} {
			create(t, c, o)
		}

		// reads answers the reads outside the scope (and a List inside it)
		// with ctx, as one line.
		reads := func(ctx context.Context) string {
			var got corev1.ConfigMap
			unlabeled := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unlabeled"}, &got)
			elsewhere := c.Get(ctx, client.ObjectKey{Namespace: other, Name: "elsewhere"}, &got)
			var list corev1.ConfigMapList
			otherList := c.List(ctx, &list, client.InNamespace(other))
			var names []string
			if err := c.List(ctx, &list); err != nil {
				names = []string{err.Error()}
			}
			for _, it := range list.Items {
				names = append(names, it.Name)
			}
			return fmt.Sprintf("%v: unlabeled %s, elsewhere %s, list of %s %s, list %v",
				ctx.Value(userKey{}), outcome(unlabeled), outcome(elsewhere), other, outcome(otherList), names)
		}
		scopedLine := fmt.Sprintf("user: unlabeled NotFound, elsewhere ErrOutOfScope, list of %s ErrOutOfScope, list [cm probe]", other)

		view := &scopedView{data: map[string]string{}, rv: map[string]string{}}
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var got corev1.ConfigMap
			if err := c.Get(ctx, req.NamespacedName, &got); apierrors.IsNotFound(err) {
				got.Data = map[string]string{"i": "gone"}
			} else if err != nil {
				return reconcile.Result{}, err
			}
			line := ""
			if req.Name == "probe" {
				line = reads(ctx)
			}
			view.mu.Lock()
			defer view.mu.Unlock()
			view.data[req.Name], view.rv[req.Name] = got.Data["i"], got.ResourceVersion
			if line != "" {
				view.probes = append(view.probes, line)
			}
			return reconcile.Result{}, nil
		})
		// A map func of the same controller reads with the handlers' context.
		mapFunc := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o handler.Object) []reconcile.Request {
			if o.GetName() == "probe" {
				line := reads(ctx)
				view.mu.Lock()
				view.handlerC = append(view.handlerC, line)
				view.mu.Unlock()
			}
			return nil
		})
		scope := informer.Scope{Namespace: ns, LabelSelector: "kloop-scope = in"}
		err := builder.ControllerManagedBy(mgr).
			For(&corev1.ConfigMap{}, builder.WithScope(scope)).
			Watches(&corev1.ConfigMap{}, mapFunc, builder.WithScope(informer.Scope{Namespace: ns, LabelSelector: "kloop-scope=in"})).
			WithOptions(controller.Options{BaseContext: func(ctx context.Context) context.Context {
				return context.WithValue(ctx, userKey{}, "user") // kept, under the builder's scopes
			}}).
			Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		start(t, mgr)
		testutil.Eventually(t, "the probe's first reconcile", func() bool { return len(view.lines(&view.probes)) == 1 })
		if got := view.lines(&view.probes); got[0] != scopedLine {
			t.Fatalf("in a reconcile:\n got %s\nwant %s", got[0], scopedLine)
		}
		testutil.Eventually(t, "the map func on the probe's create", func() bool { return len(view.lines(&view.handlerC)) == 1 })
		if got := view.lines(&view.handlerC); got[0] != scopedLine {
			t.Fatalf("in a map func:\n got %s\nwant %s", got[0], scopedLine)
		}

		// A burst of updates: the last reconcile sees the last version.
		for i := range 20 {
			cm.Data["i"] = strconv.Itoa(i)
			if err := c.Update(context.Background(), cm); err != nil {
				t.Fatalf("update %d: %v", i, err)
			}
		}
		testutil.Eventually(t, "a reconcile that sees the last update", func() bool {
			data, rv := view.last("cm")
			return data == "19" && rv == cm.ResourceVersion
		})
		if n := mgr.Factory().NumInformers(); n != 1 {
			t.Fatalf("the factory holds %d informers, want 1: the scoped one the controller and its reads share", n)
		}

		// Without the reconcile's context: the whole kind, from an informer
		// of its own that only this read starts.
		if got, want := reads(context.Background()), fmt.Sprintf("<nil>: unlabeled found, elsewhere found, list of %s found, list", other); len(got) < len(want) || got[:len(want)] != want {
			t.Fatalf("outside reconciles:\n got %s\nwant %s…", got, want)
		}
		if n := mgr.Factory().NumInformers(); n != 2 {
			t.Fatalf("the factory holds %d informers, want 2 once a read outside reconciles started the whole kind's", n)
		}
		// The reconciles still read the scope's informer.
		probe.Data["n"] = "1"
		if err := c.Update(context.Background(), probe); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the probe's reconcile after its update", func() bool { return len(view.lines(&view.probes)) == 2 })
		if got := view.lines(&view.probes); got[1] != scopedLine {
			t.Fatalf("in a reconcile, with the whole kind's informer running:\n got %s\nwant %s", got[1], scopedLine)
		}

		// An object that leaves the scope is deleted for the controller.
		cm.Labels = nil
		if err := c.Update(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "a reconcile of the object that left the scope, which finds it gone", func() bool {
			data, _ := view.last("cm")
			return data == "gone"
		})
	})
}
