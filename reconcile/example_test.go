package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/reconcile"
)

// widgets stands in for the cache the reconciler reads.
var widgets = map[string]string{"default/ready": "Ready", "default/pending": "Pending", "default/broken": "Invalid"}

// A Reconciler reads the current state and answers with one of the Result
// rules: done, look again later, retry with backoff, or give up.
func Example() {
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		log := reconcile.LoggerFrom(ctx)
		state, ok := widgets[req.String()]
		switch {
		case !ok:
			return reconcile.Result{}, nil // gone: nothing to do
		case state == "Pending":
			log.Info("waiting for the external resource")
			return reconcile.Result{RequeueAfter: time.Second}, nil
		case state == "Invalid":
			return reconcile.Result{}, reconcile.Terminal(errors.New("spec.size must be positive"))
		default:
			return reconcile.Result{}, nil
		}
	})

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	for _, name := range []string{"ready", "pending", "broken", "gone"} {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}
		// The controller does this for every reconcile.
		ctx := reconcile.NewContext(context.Background(), "id-"+name,
			logger.With("controller", "widget", "namespace", req.Namespace, "name", req.Name, "reconcileID", "id-"+name))
		res, err := r.Reconcile(ctx, req)
		fmt.Printf("%s: requeueAfter=%s terminal=%t err=%v\n", name, res.RequeueAfter, reconcile.IsTerminal(err), err)
	}
	// Output:
	// ready: requeueAfter=0s terminal=false err=<nil>
	// level=INFO msg="waiting for the external resource" controller=widget namespace=default name=pending reconcileID=id-pending
	// pending: requeueAfter=1s terminal=false err=<nil>
	// broken: requeueAfter=0s terminal=true err=terminal error: spec.size must be positive
	// gone: requeueAfter=0s terminal=false err=<nil>
}
