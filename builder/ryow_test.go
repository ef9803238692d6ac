package builder_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// TestReadYourOwnWritesGenerateName is the classic stale-cache bug: a
// reconciler that lists its children and creates one with generateName
// when it finds none. Its watches lag the server by 700 ms (a delayed
// transport), and it passes again and again (RequeueAfter 20 ms) before
// the cache has its first child. With read-your-own-writes (the default)
// it creates exactly one child: the controller skips the key until the
// cache has the key's last writes, and the client's List waits for the
// client's own Create; with the controller's skip alone (the manager's
// client opted out) too; with both off, it creates one per pass.
func TestReadYourOwnWritesGenerateName(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		for _, tc := range []struct {
			name          string
			clientOff     bool
			controllerOff bool
			want          func(n int) bool
			wantText      string
		}{
			{"on", false, false, func(n int) bool { return n == 1 }, "exactly 1"},
			{"controller skip only", true, false, func(n int) bool { return n == 1 }, "exactly 1"},
			{"off", true, true, func(n int) bool { return n > 1 }, "more than 1"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				hc := env.HTTPClient(testutil.DelayWatches(700 * time.Millisecond))
				mgr, err := manager.New(env.Config(), manager.Options{
					Cache:                    informer.FactoryOptions{HTTPClient: hc, DefaultNamespaces: []string{env.Namespace}},
					DisableReadYourOwnWrites: tc.clientOff,
				})
				if err != nil {
					t.Fatal(err)
				}
				parent := "parent-" + tc.name[:2]
				const passes = 12
				var mu sync.Mutex
				n := 0
				done := make(chan struct{})
				r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
					if req.Name != parent {
						return reconcile.Result{}, nil
					}
					mu.Lock()
					n++
					pass := n
					mu.Unlock()
					if pass > passes {
						return reconcile.Result{}, nil
					}
					if pass == passes {
						close(done)
						return reconcile.Result{}, nil
					}
					var children corev1.ConfigMapList
					if err := mgr.Client().List(ctx, &children, client.InNamespace(env.Namespace),
						client.MatchingLabels(map[string]string{"child-of": parent})); err != nil {
						return reconcile.Result{}, err
					}
					if len(children.Items) == 0 {
						child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace,
							GenerateName: parent + "-", Labels: map[string]string{"child-of": parent}}}
						if err := mgr.Client().Create(ctx, child); err != nil {
							return reconcile.Result{}, err
						}
					}
					return reconcile.Result{RequeueAfter: 20 * time.Millisecond}, nil
				})
				if err := builder.ControllerManagedBy(mgr).Named("ryow-" + tc.name[:2]).For(&corev1.ConfigMap{}).
					WithOptions(controller.Options{DisableReadYourOwnWrites: tc.controllerOff}).Complete(r); err != nil {
					t.Fatal(err)
				}
				start(t, mgr)
				if err := mgr.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: parent}}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-done:
				case <-ctx.Done():
					t.Fatalf("%d passes of %d", n, passes)
				}
				var children corev1.ConfigMapList
				if err := mgr.Client().Uncached().List(ctx, &children, client.InNamespace(env.Namespace),
					client.MatchingLabels(map[string]string{"child-of": parent})); err != nil {
					t.Fatal(err)
				}
				if got := len(children.Items); !tc.want(got) {
					t.Fatalf("%d children created; want %s", got, tc.wantText)
				}
				t.Logf("%d children", len(children.Items))
			})
		}
	})
}
