// Package reconcile is the contract between kloop and a controller author:
// a Reconciler receives a Request (a namespace and a name, nothing about the
// event) and returns a Result and an error that tell the controller what to
// do with the key next.
//
// Reconciliation is level-based: the reconcile reads the whole current state
// (from the cache) and corrects the difference, so it must be idempotent. A
// Request says only "this object may need work".
//
// The controller handles the return values exactly as controller-runtime
// does (see kloop.dev/kloop/controller):
//
//	Result{}, nil                    done: Forget (backoff reset), the key leaves the queue
//	Result{RequeueAfter: d}, nil     done for now: Forget, then AddAfter d
//	Result{…}, err                   not done: requeue with backoff (AddRateLimited);
//	                                 the Result is ignored and a warning logged if set
//	Result{…}, Terminal(err)         failed for good: logged, counted, Forget, not requeued
//
// Result has only RequeueAfter: controller-runtime's deprecated Requeue field
// is gone, because "requeue with backoff" is what returning an error means.
// A terminal error is recognised with errors.Is(err, ErrTerminal) (or
// IsTerminal), also when it is wrapped further with %w.
//
// Each reconcile runs with a context that carries a reconcile ID and a
// logger with the attributes controller, namespace, name and reconcileID: read
// them with IDFrom and LoggerFrom.
//
// TriggersFrom tells why the reconcile runs: the events (and the
// controller's own requeues) merged into it since the key's last reconcile,
// the last few of them with their kind, object, resourceVersion, handler
// and time, and how many in all. It is for observability — logs, traces,
// "why was I reconciled?" — never for logic: a Request says only "this
// object may need work", whatever woke it. Its vocabulary (trigger.Type,
// the Cause an event source records, the bounded Record the work queue
// keeps per key) is the leaf package reconcile/trigger, which the
// informer, handler and work queue share without importing each other.
package reconcile
