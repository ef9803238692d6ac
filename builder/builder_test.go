package builder_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The integration tests run on every target of apiservertest.ForEachTarget
// (the embedded server and the real kube-apiserver), each in the namespace
// of its Env. On the real server the managers' informers watch every
// namespace of a cluster that other tests of this binary share, so the
// reconcilers count requests by namespace and name.

// newManager returns a manager for env's server (not started).
func newManager(t *testing.T, env *apiservertest.Env) *manager.Manager {
	t.Helper()
	mgr, err := manager.New(env.Config(), manager.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// start runs mgr until the test ends; the test fails if Start fails.
func start(t *testing.T, mgr *manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	})
	select {
	case <-mgr.Started():
	case err := <-done:
		t.Fatalf("manager stopped at once: %v", err)
	}
}

// counter is a Reconciler that counts reconciles per key (namespace/name);
// do, when set, runs inside each reconcile.
type counter struct {
	ns string     // the namespace get reads
	mu sync.Mutex // guards n
	n  map[string]int
	do func(ctx context.Context, req reconcile.Request, call int) error
}

func (c *counter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[req.String()]++
	call := c.n[req.String()]
	c.mu.Unlock()
	if c.do != nil {
		return reconcile.Result{}, c.do(ctx, req, call)
	}
	return reconcile.Result{}, nil
}

// get returns the reconciles of c.ns/name.
func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[c.ns+"/"+name]
}

// quiet waits a moment and checks that cond still holds: the way to see
// that an event did NOT cause a reconcile.
func quiet(t *testing.T, what string, cond func() bool) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	if !cond() {
		t.Fatalf("%s", what)
	}
}

// unique returns prefix with a random suffix: a name for a cluster-scoped
// object that no other test of the real server's binary uses.
func unique(prefix string) string {
	return prefix + "-" + strings.ToLower(rand.Text()[:8])
}

func deployment(ns, name string, annotations map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

func create(t *testing.T, c *client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
}

// Ten quick edits of one object while its first reconcile runs end in one
// more reconcile, which sees the last state.
func TestTenQuickEditsOneReconcile(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ns := env.Namespace
		mgr := newManager(t, env)
		c := mgr.Client()
		entered, release := make(chan struct{}), make(chan struct{})
		var lastSeen sync.Map
		r := &counter{ns: ns, do: func(ctx context.Context, req reconcile.Request, call int) error {
			if req.Namespace != ns {
				return nil
			}
			if req.Name == "cm" && call == 1 {
				close(entered)
				<-release
			}
			var cm corev1.ConfigMap
			if err := c.Get(ctx, req.NamespacedName, &cm); err != nil {
				return client.IgnoreNotFound(err)
			}
			lastSeen.Store(req.Name, cm.Data["i"])
			return nil
		}}
		err := builder.ControllerManagedBy(mgr).
			For(&corev1.ConfigMap{}).
			WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
			Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}, Data: map[string]string{"i": "-"}}
		create(t, c, cm)
		start(t, mgr)
		<-entered
		for i := range 10 {
			cm.Data["i"] = string(rune('0' + i))
			if err := c.Update(context.Background(), cm); err != nil {
				t.Fatalf("edit %d: %v", i, err)
			}
		}
		// The handler of the informer delivers in order: once the sentinel,
		// created after the ten edits, is reconciled (by the second worker),
		// the ten edits have been enqueued.
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sentinel"}})
		testutil.Eventually(t, "the sentinel's reconcile", func() bool { return r.get("sentinel") == 1 })
		close(release)
		testutil.Eventually(t, "the reconcile after the edits", func() bool { return r.get("cm") == 2 })
		quiet(t, "more than one reconcile for ten edits", func() bool { return r.get("cm") == 2 })
		if v, _ := lastSeen.Load("cm"); v != "9" {
			t.Fatalf("the last reconcile saw i=%v, want the last edit 9", v)
		}
	})
}

// Owns maps a child's change to its controller owner (or, with
// MatchEveryOwner, every owner of the For kind). No controller creates
// ReplicaSets on either server: the test writes the child itself.
func TestOwnsMapsChildToOwner(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ns := env.Namespace
		mgr := newManager(t, env)
		c := mgr.Client()
		onlyController, every := &counter{ns: ns}, &counter{ns: ns}
		if err := builder.ControllerManagedBy(mgr).For(&appsv1.Deployment{}).Owns(&appsv1.ReplicaSet{}).Complete(onlyController); err != nil {
			t.Fatal(err)
		}
		if err := builder.ControllerManagedBy(mgr).Named("every-owner").For(&appsv1.Deployment{}).
			Owns(&appsv1.ReplicaSet{}, builder.MatchEveryOwner()).Complete(every); err != nil {
			t.Fatal(err)
		}
		a, b := deployment(ns, "a", nil), deployment(ns, "b", nil)
		create(t, c, a)
		create(t, c, b)
		start(t, mgr)
		for _, r := range []*counter{onlyController, every} {
			testutil.Eventually(t, "the initial reconciles", func() bool { return r.get("a") == 1 && r.get("b") == 1 })
		}

		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b-123", Labels: map[string]string{"app": "b"},
				OwnerReferences: []metav1.OwnerReference{
					{APIVersion: "apps/v1", Kind: "Deployment", Name: "a", UID: a.UID},
					{APIVersion: "apps/v1", Kind: "Deployment", Name: "b", UID: b.UID, Controller: new(true)},
				}},
			Spec: appsv1.ReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}},
				Template: b.Spec.Template,
			},
		}
		create(t, c, rs)
		testutil.Eventually(t, "the controller owner's reconcile", func() bool { return onlyController.get("b") == 2 })
		testutil.Eventually(t, "every owner's reconcile", func() bool { return every.get("a") == 2 && every.get("b") == 2 })

		rs.Labels["touched"] = "yes"
		if err := c.Update(context.Background(), rs); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the owner's reconcile after the child's update", func() bool { return onlyController.get("b") == 3 })
		quiet(t, "a non-controller owner was reconciled", func() bool { return onlyController.get("a") == 1 })
	})
}

// Owns of a cluster-scoped For kind enqueues the owner without a namespace;
// deleting the child enqueues the owner again. The owner is the test's own
// namespace.
func TestOwnsClusterScopedOwnerAndDelete(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		mgr := newManager(t, env)
		c := mgr.Client()
		var mu sync.Mutex // guards reqs
		reqs := map[reconcile.Request]int{}
		r := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			reqs[req]++
			return reconcile.Result{}, nil
		})
		if err := builder.ControllerManagedBy(mgr).For(&corev1.Namespace{}).Owns(&corev1.ConfigMap{}).Complete(r); err != nil {
			t.Fatal(err)
		}
		team := &corev1.Namespace{}
		if err := c.Uncached().Get(context.Background(), client.ObjectKey{Name: env.Namespace}, team); err != nil {
			t.Fatal(err)
		}
		start(t, mgr)
		owner := reconcile.Request{NamespacedName: types.NamespacedName{Name: team.Name}}
		count := func() int { mu.Lock(); defer mu.Unlock(); return reqs[owner] }
		testutil.Eventually(t, "the namespace's reconcile", func() bool { return count() == 1 })
		child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: team.Name, Name: "child", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Namespace", Name: team.Name, UID: team.UID, Controller: new(true)},
		}}}
		create(t, c, child)
		testutil.Eventually(t, "the owner's reconcile after the child's create", func() bool { return count() == 2 })
		if err := c.Delete(context.Background(), child); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the owner's reconcile after the child's delete", func() bool { return count() == 3 })
		mu.Lock()
		defer mu.Unlock()
		for req := range reqs {
			if req.Namespace != "" {
				t.Fatalf("unexpected request %v: Namespaces are cluster-scoped", req)
			}
		}
	})
}

// A map function fans one ConfigMap out to every Deployment that reads it.
func TestMapFuncFansOut(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ns := env.Namespace
		mgr := newManager(t, env)
		c := mgr.Client()
		r := &counter{ns: ns}
		usersOf := func(ctx context.Context, o handler.Object) []reconcile.Request {
			var list appsv1.DeploymentList
			if err := c.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
				return nil
			}
			var reqs []reconcile.Request
			for _, d := range list.Items {
				if d.Annotations["config"] == o.GetName() {
					reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}})
				}
			}
			return reqs
		}
		err := builder.ControllerManagedBy(mgr).
			For(&appsv1.Deployment{}).
			Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(usersOf)).
			Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		users := []string{"u1", "u2", "u3"}
		for _, n := range users {
			create(t, c, deployment(ns, n, map[string]string{"config": "shared"}))
		}
		create(t, c, deployment(ns, "other", map[string]string{"config": "another"}))
		start(t, mgr)
		all := func(n int) func() bool {
			return func() bool {
				for _, u := range users {
					if r.get(u) != n {
						return false
					}
				}
				return r.get("other") == 1
			}
		}
		testutil.Eventually(t, "the initial reconciles", all(1))

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Data: map[string]string{"k": "1"}}
		create(t, c, cm)
		testutil.Eventually(t, "a reconcile of every user after the create", all(2))
		cm.Data["k"] = "2"
		if err := c.Update(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "a reconcile of every user after the update", all(3))
		quiet(t, "a Deployment that does not read the ConfigMap was reconciled", all(3))
	})
}

// GenerationChanged drops status-only updates, which reach a controller
// without the filter; both controllers share one informer, also with the
// client's reads.
func TestGenerationChangedDropsStatusUpdates(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ns := env.Namespace
		mgr := newManager(t, env)
		c := mgr.Client()
		filtered, unfiltered := &counter{ns: ns}, &counter{ns: ns}
		if err := builder.ControllerManagedBy(mgr).Named("filtered").For(&appsv1.Deployment{}).
			WithEventFilter(predicate.GenerationChanged{}).Complete(filtered); err != nil {
			t.Fatal(err)
		}
		if err := builder.ControllerManagedBy(mgr).Named("unfiltered").For(&appsv1.Deployment{}).Complete(unfiltered); err != nil {
			t.Fatal(err)
		}
		d := deployment(ns, "web", nil)
		create(t, c, d)
		start(t, mgr)
		both := func(f, u int) func() bool {
			return func() bool { return filtered.get("web") == f && unfiltered.get("web") == u }
		}
		testutil.Eventually(t, "the initial reconciles", both(1, 1))

		d.Status.ObservedGeneration = d.Generation
		d.Status.Replicas = 1
		if err := c.Status().Update(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the unfiltered controller's reconcile of the status update", func() bool { return unfiltered.get("web") == 2 })
		quiet(t, "the status-only update passed GenerationChanged", both(1, 2))

		d.Spec.Replicas = new(int32(3))
		if err := c.Update(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "both reconciles of the spec update", both(2, 3))

		var got appsv1.Deployment
		if err := c.Get(context.Background(), client.KeyOf(d), &got); err != nil {
			t.Fatal(err)
		}
		if n := mgr.Factory().NumInformers(); n != 1 {
			t.Fatalf("the factory holds %d informers, want 1 for Deployments shared by two controllers and the client", n)
		}
	})
}

// A controller without For (Named, Watches only) also takes events from a
// channel source.
func TestNamedWithoutForAndChannelSource(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		mgr := newManager(t, env)
		r := &counter{ns: env.Namespace}
		events := make(chan handler.Event, 1)
		src, err := controller.NewChannelSource(events, handler.EnqueueRequestForObject{}, controller.ChannelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := builder.ControllerManagedBy(mgr).Named("external").WatchesSource(src).
			Watches(&corev1.ConfigMap{}, handler.EnqueueRequestForObject{}).Complete(r); err != nil {
			t.Fatal(err)
		}
		start(t, mgr)
		events <- handler.GenericEvent{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "from-channel"}}}
		testutil.Eventually(t, "the channel event's reconcile", func() bool { return r.get("from-channel") == 1 })
		create(t, mgr.Client(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "from-server"}})
		testutil.Eventually(t, "the watched ConfigMap's reconcile", func() bool { return r.get("from-server") == 1 })
	})
}

// OnlyMetadata watches through the metadata-only informer; WithScope
// restricts a watch to one namespace, and the reconciles' metadata-only
// reads to the same informer.
func TestOnlyMetadataAndScope(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		mgr := newManager(t, env)
		c := mgr.Client()
		team := unique("team")
		create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}})
		var mu sync.Mutex // guards seen
		seen := map[string]string{}
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			// A metadata-only read, from the scoped informer the watch uses.
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			err := c.Get(ctx, req.NamespacedName, m)
			mu.Lock()
			defer mu.Unlock()
			seen[req.String()] = outcome(err)
			return reconcile.Result{}, nil
		})
		var objTypes sync.Map
		typeOf := handler.Funcs{CreateFunc: func(_ context.Context, e handler.CreateEvent, q handler.Enqueuer) {
			objTypes.Store(e.Object.GetName(), fmt.Sprintf("%T", e.Object))
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}})
		}}
		err := builder.ControllerManagedBy(mgr).Named("scoped").
			Watches(&corev1.ConfigMap{}, typeOf, builder.OnlyMetadata(), builder.WithScope(informer.Scope{Namespace: team})).
			Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "outside"}})
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "inside"}})
		start(t, mgr)
		testutil.Eventually(t, "the reconcile in scope", func() bool { mu.Lock(); defer mu.Unlock(); return seen[team+"/inside"] != "" })
		// (The team namespace's kube-root-ca.crt is in scope too.)
		quiet(t, "an object out of scope was reconciled", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for k := range seen {
				if !strings.HasPrefix(k, team+"/") {
					return false
				}
			}
			return true
		})
		if got, _ := objTypes.Load("inside"); got != "*v1.PartialObjectMetadata" {
			t.Fatalf("the handler saw %v, want *v1.PartialObjectMetadata", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := seen[team+"/inside"]; got != "found" {
			t.Fatalf("the reconcile's metadata-only Get: %s", got)
		}
		if n := mgr.Factory().NumInformers(); n != 1 {
			t.Fatalf("the factory holds %d informers, want 1: the scoped metadata-only one the watch and the reads share", n)
		}
	})
}

type notInScheme struct{ corev1.ConfigMap }

func TestBuilderErrors(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testBuilderErrors)
}

func testBuilderErrors(t *testing.T, env *apiservertest.Env) {
	mgr := newManager(t, env)
	// A group no server of this binary serves (other tests install the
	// Widget CRD on the shared real server).
	unserved := &unstructured.Unstructured{}
	unserved.SetAPIVersion("unserved.kloop.test/v1")
	unserved.SetKind("Gadget")
	r := &counter{}
	if err := builder.ControllerManagedBy(mgr).Named("taken").For(&corev1.Secret{}).Complete(r); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		build func() error
		want  string
	}{
		{"no manager", func() error { return builder.ControllerManagedBy(nil).For(&corev1.ConfigMap{}).Complete(r) }, "needs a manager"},
		{"no reconciler", func() error { return builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(nil) }, "needs a Reconciler"},
		{"For twice", func() error {
			return builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).For(&corev1.Secret{}).Complete(r)
		}, "For called more than once"},
		{"missing For", func() error {
			return builder.ControllerManagedBy(mgr).Watches(&corev1.ConfigMap{}, handler.EnqueueRequestForObject{}).Complete(r)
		}, "For is required"},
		{"Owns without For", func() error {
			return builder.ControllerManagedBy(mgr).Named("x").Owns(&corev1.ConfigMap{}).Complete(r)
		}, "Owns needs For"},
		{"nothing to watch", func() error { return builder.ControllerManagedBy(mgr).Named("empty").Complete(r) }, "nothing to watch"},
		{"nil object", func() error { return builder.ControllerManagedBy(mgr).For(nil).Complete(r) }, "nil object"},
		{"typed nil object", func() error { return builder.ControllerManagedBy(mgr).For((*corev1.Pod)(nil)).Complete(r) }, "nil object"},
		{"type not in the scheme", func() error { return builder.ControllerManagedBy(mgr).For(&notInScheme{}).Complete(r) }, "not in the manager's Scheme"},
		{"unstructured without kind", func() error {
			return builder.ControllerManagedBy(mgr).For(&unstructured.Unstructured{}).Complete(r)
		}, "apiVersion and kind must be set"},
		// Without FailOnMissingKind the controller waits for the kind
		// (TestControllerFollowsCRD).
		{"kind the server does not serve, FailOnMissingKind", func() error {
			return builder.ControllerManagedBy(mgr).FailOnMissingKind().For(unserved).Complete(r)
		}, "Gadget"},
		{"nil handler", func() error {
			return builder.ControllerManagedBy(mgr).For(&corev1.Pod{}).Watches(&corev1.ConfigMap{}, nil).Complete(r)
		}, "nil handler"},
		{"MatchEveryOwner on For", func() error {
			return builder.ControllerManagedBy(mgr).For(&corev1.Pod{}, builder.MatchEveryOwner()).Complete(r)
		}, "Owns only"},
		{"empty name", func() error { return builder.ControllerManagedBy(mgr).Named("").For(&corev1.Pod{}).Complete(r) }, "empty name"},
		{"name taken", func() error { return builder.ControllerManagedBy(mgr).Named("taken").For(&corev1.Pod{}).Complete(r) }, `controller named "taken" is already`},
		{"invalid controller options", func() error {
			return builder.ControllerManagedBy(mgr).Named("bad").For(&corev1.Pod{}).
				WithOptions(controller.Options{MaxConcurrentReconciles: -1}).Complete(r)
		}, "MaxConcurrentReconciles -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.build()
			if err == nil {
				t.Fatal("Complete succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}
