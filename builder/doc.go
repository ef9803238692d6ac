// Package builder wires a reconcile.Reconciler into a manager in the shape
// controller authors know from controller-runtime:
//
//	err := builder.ControllerManagedBy(mgr).
//		For(&v1.Widget{}).                       // reconcile Widgets: their own key
//		Owns(&appsv1.Deployment{}).              // a Deployment's change: its controller owner's key
//		Watches(&corev1.ConfigMap{},             // any relation: your map function
//			handler.EnqueueRequestsFromMapFunc(r.widgetsForConfigMap)).
//		WithEventFilter(predicate.GenerationChanged{}).
//		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
//		Complete(r)
//
// For is handler.EnqueueRequestForObject on the kind; Owns is
// handler.EnqueueRequestForOwner of For's kind, controller owner only (the
// MatchEveryOwner option: every owner of that kind); Watches takes any
// handler. Each becomes an informer.Source: one handler on the manager's
// shared informer for that kind (one watch and one cache per kind for every
// controller of the manager, and the same cache the manager's client reads),
// delivering the initial list at low priority, and synced once that handler
// has seen the initial list. WithEventFilter predicates apply to every watch,
// WithPredicates to one. For and Owns whose predicates are all kloop's own
// (predicate.IsBuiltin) are called on the informer's goroutine right after
// the cache updates they follow (informer.SourceOptions.Inline): nothing of the user's runs
// there, and each event saves a hand-off. Watches handlers and predicates of
// the user's keep a buffer and a goroutine of their own, so a slow one never
// stalls the informer.
//
// WithScope restricts a watch to a namespace or a label or field selector
// (its own shared informer). The controller's reconciles and handlers then
// read that kind through the manager's client from the same scoped
// informer, not from a whole-kind one: they never see an object older than
// the event that woke them, and no whole-kind informer is started. They see
// only the scope: Get of an object its selectors exclude is NotFound, a Get
// or List in another namespace fails with client.ErrOutOfScope (see
// client.WithReadScopes).
//
// Kinds are found through the manager's Scheme (Go type → kind) and Mapper
// (kind → resource); an *unstructured.Unstructured or
// *metav1.PartialObjectMetadata carries its kind itself. The builder is not
// generic and uses no reflection beyond that scheme lookup.
//
// Nothing panics: mistakes — For twice, Owns without For, no For and no
// Named, a nil object or handler, a kind the Scheme does not know, a
// controller name already used in the manager — are returned by Complete
// (or Build). The controller's name defaults to For's kind in lower case;
// its Logger, Metrics and QueueMetrics default to the manager's. The
// builder also adds a "controller-<name>" readiness check to the manager.
//
// Watches follow CRDs: a kind the server does not serve yet (its CRD is not
// installed) is not an error; its watch waits for it, polling discovery,
// and the readiness check says "waiting for kind Widget.example.com/v1 to
// be served (its CRD does not exist)" meanwhile, while the controller's
// other watches run. When the CRD is deleted the kind's informers stop and
// the watch waits again; when it comes back they list it again. See
// Builder.FailOnMissingKind, which restores the fail-fast behaviour.
//
// # Webhooks
//
// WebhookManagedBy registers a kind's admission and conversion webhooks on
// the manager's webhook server (kloop.dev/kloop/webhook), at
// controller-runtime's paths:
//
//	err := builder.WebhookManagedBy(mgr, &v1.Widget{}).
//		WithDefaulter(widgetDefaulter{}). // admission.Defaulter[*v1.Widget]: /mutate-example-com-v1-widget
//		WithValidator(widgetValidator{}). // admission.Validator[*v1.Widget]: /validate-example-com-v1-widget
//		Complete()
//
// A kind whose versions in the manager's Scheme are a hub and its spokes
// (conversion.Hub, conversion.Convertible) is converted at /convert, as is
// one given WithConverter (conversion.Funcs). The object comes with
// WebhookManagedBy, not a For, so that the defaulter and the validator are
// typed: a Go method cannot take a type parameter of its own.
package builder
