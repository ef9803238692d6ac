// Package kloop is a Kubernetes controller runtime for Go, written from first
// principles. It implements the whole path from a change in the API to a call
// of a reconcile function, and back.
//
// The pipeline, one package per stage:
//
//	apiserver       embedded Kubernetes API server: REST, watch, discovery, CRDs, RBAC (storage/, apiservertest/,
//	                conformance/: the same transcripts against it and a real kube-apiserver, compared;
//	                internal/jsontree, typed, jsonpatch, openapi, rbac: JSON trees, type checks,
//	                patches, OpenAPI documents, the authorizer; CRDs by k8s.io/apiextensions-apiserver)
//	reflector       lists, then watches from the list's resourceVersion; relists on 410 Gone
//	fifo            delivers every delta in order; a relist as one atomic batch
//	cache           thread-safe indexer keyed namespace/name, with indexes; lock-free Get
//	informer        pops the FIFO, updates the cache, then notifies handlers; shared Factory; Source (a
//	                controller's events of one shared informer)
//	client          reads from the informer cache, writes to the API server (config/: the *rest.Config
//	                from --kubeconfig, $KUBECONFIG, in-cluster or ~/.kube/config)
//	handler         maps events to requests (keys, never objects); predicate/ filters events
//	workqueue       deduplicating, fair, rate-limited, delaying, prioritised queue of keys
//	reconcile       Reconciler, Request, Result{RequeueAfter}, Terminal errors; trigger/: why a key was
//	                queued (Cause, Record), the vocabulary the sources, handlers and queue share
//	controller      workers that take keys and call Reconcile, applying the Result rules
//	                (controllerutil/: finalizer, owner-reference, status and create-or-update helpers)
//	manager         one shared cache, a client, runnables, leader election, probes and /metrics
//	builder         For / Owns / Watches wiring of a controller into a manager; WebhookManagedBy
//	webhook         the webhook server (TLS, cert reload, metrics); admission/: defaulting and validation
//	                webhooks (Defaulter[T], Validator[T]); conversion/: CRD conversion (hub and spoke, functions)
//	leaderelection  leader election on a coordination.k8s.io/v1 Lease
//	metrics         Prometheus exposition of the stages' statistics, controller-runtime's names
//	internal        shared parts: chunkq (chunked FIFO buffer), rctx (one reconcile's context: ID, logger, triggers, writes), certreload
//	                (TLS serving certificates reloaded on rotation), selfsigned,
//	                rest (the REST calls of client, reflector, discovery: Status errors, Retry-After, retries,
//	                rate limit, OpenTelemetry spans), liveview (the manager's live view of the pipeline: page,
//	                server-sent figures, per-object timelines); for tests: testutil (Eventually, SyncBuffer, a
//	                metrics Provider), testcrd
//
// Commands and examples:
//
//	cmd/kloop            kloop apiserver: the embedded API server for kubectl and client-go; kloop cloud: the
//	                     demo's local cloud; kloop version
//	examples/demo        the live demo of the Widget operator on the embedded API server (a launcher)
//	examples/widget      the Widget operator in kubebuilder's layout: api/v1, internal/controller (Widget,
//	                     WidgetSet), config/ by controller-gen, demo/ and cmd/demo (the live demo)
//	examples/cloud       the local cloud the Widgets' instances live in, and its client (cloudclient/)
//	examples/rawloop     informer + queue + your own worker loop, the seeds' client-go style
//	examples/workqueue   a runnable tour of the work queue
//	examples/kubebuilder kubebuilder's cmd/main.go ported to kloop
//	docs/                from-controller-runtime.md: controller-runtime's names mapped to kloop's
//	hack/realk8s.sh      builds kube-apiserver, kube-controller-manager and etcd from the Go module proxy
//	                     for the tests' real target
//	hack/crsuites.sh     runs controller-runtime's own envtest suites on both servers (a measurement)
//	hack/fuzz.sh         every fuzz target for a bounded time (CI)
//
// Separate module:
//
//	bench      side-by-side benchmarks against client-go and controller-runtime
package kloop
