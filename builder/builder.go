package builder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/workqueue"
)

// Option qualifies one For, Owns or Watches.
type Option func(*watchOptions)

type watchOptions struct {
	predicates   []predicate.Predicate
	onlyMetadata bool
	everyOwner   bool
	scope        informer.Scope
}

// WithPredicates filters the events of this watch only (after the builder's
// event filters, which apply to every watch).
func WithPredicates(ps ...predicate.Predicate) Option {
	return func(o *watchOptions) { o.predicates = append(o.predicates, ps...) }
}

// OnlyMetadata watches the kind through the factory's metadata-only
// informer (*metav1.PartialObjectMetadata): the server sends only each
// object's metadata, the cheapest watch for a kind whose content the
// controller does not read. Handlers and predicates then see
// *metav1.PartialObjectMetadata objects.
func OnlyMetadata() Option { return func(o *watchOptions) { o.onlyMetadata = true } }

// MatchEveryOwner makes an Owns enqueue every owner of the For kind in the
// object's ownerReferences, not only the controller owner. Only for Owns.
func MatchEveryOwner() Option { return func(o *watchOptions) { o.everyOwner = true } }

// WithScope restricts the watch to part of the kind (a namespace, a label or
// field selector). Each distinct scope is its own shared informer (one watch
// and one cache for every controller of the manager that asks for it).
//
// The controller's cached reads of the kind go to that same informer: the
// builder puts client.ReadScopes in the context of the controller's
// reconciles and handlers (controller.Options.BaseContext), so a Get or List
// through the manager's client with that context reads the scoped cache
// that woke the reconcile — never an object older than the event — and its
// reads start no whole-kind informer for the kind. The controller then sees
// only its scope: Get of an object its selectors exclude is NotFound, List
// returns the scope's objects, and a Get or List in another namespace than a
// namespace scope's fails with client.ErrOutOfScope. An object that leaves the scope (a label
// the selector needs removed) is, for this controller, deleted: the scoped
// informer delivers a delete event and Get answers NotFound (as with
// controller-runtime's label-selected caches). Reads with another context
// (outside reconciles, other controllers) and client.Uncached are
// unchanged.
//
// This holds for a kind the controller watches with a single scope, in any
// form (typed, OnlyMetadata, unstructured; a read in another form than the
// watch's uses that form's informer of the scope). A kind watched with two
// different scopes, or with and without one, is read from the whole kind.
func WithScope(s informer.Scope) Option { return func(o *watchOptions) { o.scope = s } }

// inlineDelivery reports whether a watch's events are handled on the
// informer's goroutine (informer.SourceOptions.Inline). For and Owns enqueue
// with kloop's own handlers: with built-in predicates only, nothing of the
// user's runs on the informer's goroutine, so they are called there, one
// hand-off less per event. A Watches handler, and a Funcs or other
// predicate of the user's, is user code: buffered, so that a slow one never
// stalls the informer.
func inlineDelivery(what string, preds []predicate.Predicate) bool {
	return (what == "For" || what == "Owns") && predicate.IsBuiltin(predicate.And(preds...))
}

// kindSource is what the builder needs of an informer.Source[T], whatever T.
type kindSource interface {
	controller.Source
	Started() bool
	Pending() int
	String() string
}

type watch struct {
	obj     client.Object
	handler handler.EventHandler // nil for For and Owns: derived at Build
	opts    watchOptions
	what    string // "For", "Owns" or "Watches", for errors
}

// Builder builds a controller and adds it to a manager. Make it with
// ControllerManagedBy; each method returns the builder; errors (For twice, a
// nil object, an unknown kind…) are reported by Complete or Build.
type Builder struct {
	mgr     *manager.Manager
	name    string
	forW    *watch
	owns    []watch
	watches []watch
	sources []controller.Source
	filters []predicate.Predicate
	opts    controller.Options
	errs    []error
	// failOnMissing: FailOnMissingKind.
	failOnMissing bool
}

// ControllerManagedBy starts building a controller that mgr runs.
func ControllerManagedBy(mgr *manager.Manager) *Builder {
	return &Builder{mgr: mgr}
}

// Named names the controller (logs, metrics, the "controller-<name>"
// readiness check). Default: the lowercase kind of For. Names are unique
// within a manager.
func (b *Builder) Named(name string) *Builder {
	if name == "" {
		b.errs = append(b.errs, errors.New("builder: Named with an empty name"))
	}
	b.name = name
	return b
}

// For sets the kind the controller reconciles: events of its objects enqueue
// their own namespace/name (handler.EnqueueRequestForObject). obj is an
// example object: a pointer to a Go type of the manager's Scheme, or an
// *unstructured.Unstructured / *metav1.PartialObjectMetadata with apiVersion
// and kind set. For may be called once.
func (b *Builder) For(obj client.Object, opts ...Option) *Builder {
	if b.forW != nil {
		b.errs = append(b.errs, errors.New("builder: For called more than once: a controller reconciles one kind (use Watches for the others)"))
		return b
	}
	w := newWatch("For", obj, nil, opts)
	if w.opts.everyOwner {
		b.errs = append(b.errs, errors.New("builder: MatchEveryOwner applies to Owns only"))
	}
	b.forW = &w
	return b
}

// Owns watches a kind the controller creates: a change of such an object
// enqueues its controller owner of the For kind
// (handler.EnqueueRequestForOwner, controller owner only; MatchEveryOwner
// for every owner of that kind). Needs For.
func (b *Builder) Owns(obj client.Object, opts ...Option) *Builder {
	b.owns = append(b.owns, newWatch("Owns", obj, nil, opts))
	return b
}

// Watches watches any kind with the given handler, for example
// handler.EnqueueRequestsFromMapFunc(fn) to wake the objects that depend on
// the one that changed.
func (b *Builder) Watches(obj client.Object, h handler.EventHandler, opts ...Option) *Builder {
	w := newWatch("Watches", obj, h, opts)
	if h == nil {
		b.errs = append(b.errs, fmt.Errorf("builder: Watches(%T) with a nil handler", obj))
	}
	if w.opts.everyOwner {
		b.errs = append(b.errs, errors.New("builder: MatchEveryOwner applies to Owns only"))
	}
	b.watches = append(b.watches, w)
	return b
}

// WatchesSource adds a source that is not an informer of the manager, such
// as a controller.ChannelSource. The builder's event filters do not apply to
// it (give the source its own predicates).
func (b *Builder) WatchesSource(src controller.Source) *Builder {
	if src == nil {
		b.errs = append(b.errs, errors.New("builder: WatchesSource with a nil source"))
		return b
	}
	b.sources = append(b.sources, src)
	return b
}

// FailOnMissingKind makes a For, Owns or Watches of a kind the server does
// not serve (its CRD is not installed) fail Build, as controller-runtime
// does, and makes the controller fail (and so the manager stop) when a
// watched kind stops being served (its CRD deleted).
//
// Default (without it): the controller follows its kinds' CRDs. A watch of
// a kind not served yet waits for it — it asks discovery again 1 s after
// the first miss, doubling up to 30 s (informer.KindPollInitial,
// KindPollMax) — and starts its informer once the kind is served. Meanwhile
// the controller's workers run for its other sources (the waiting one has
// nothing to deliver, so CacheSyncTimeout does not count it), its
// readiness check "controller-<name>" fails with "waiting for kind
// Widget.example.com/v1 to be served (its CRD does not exist)", and the
// log says so once, at Info. When the CRD is deleted (the informer's list
// or watch answers 404 and discovery no longer lists the kind), the
// factory stops and drops the kind's informers, and their caches with
// them (the server deleted the CRD's objects first, and the watch
// delivered their delete events; nothing more is delivered), the watch
// waits again, and once the CRD is back a new informer lists the kind and
// the reconciles resume, as at start.
func (b *Builder) FailOnMissingKind() *Builder {
	b.failOnMissing = true
	return b
}

// WithEventFilter adds a predicate that filters the events of every For,
// Owns and Watches of the controller.
func (b *Builder) WithEventFilter(p predicate.Predicate) *Builder {
	b.filters = append(b.filters, p)
	return b
}

// WithOptions sets the controller's options. Left unset, Logger, Metrics,
// QueueMetrics, TracerProvider, TracedWrites and Observer are the
// manager's. When a watch has a scope (WithScope), the builder wraps
// BaseContext to add the client.ReadScopes of the controller after the one
// given here.
func (b *Builder) WithOptions(opts controller.Options) *Builder {
	b.opts = opts
	return b
}

// Complete builds the controller and adds it to the manager.
func (b *Builder) Complete(r reconcile.Reconciler) error {
	_, err := b.Build(r)
	return err
}

// Build builds the controller, adds it to the manager and returns it.
// When it returns an error, the manager runs no controller of it.
func (b *Builder) Build(r reconcile.Reconciler) (*controller.Controller, error) {
	if b.mgr == nil {
		return nil, errors.New("builder: ControllerManagedBy needs a manager")
	}
	if r == nil {
		return nil, errors.New("builder: Complete needs a Reconciler")
	}
	if err := errors.Join(b.errs...); err != nil {
		return nil, err
	}
	if b.forW == nil {
		if len(b.owns) > 0 {
			return nil, errors.New("builder: Owns needs For: the owner kind is For's")
		}
		if b.name == "" {
			return nil, errors.New("builder: For is required (or Named, with Watches only)")
		}
	}
	if b.forW == nil && len(b.watches) == 0 && len(b.sources) == 0 {
		return nil, errors.New("builder: nothing to watch: call For, Watches or WatchesSource")
	}

	// Resolve every kind before creating anything, so that an invalid
	// watch leaves the factory and the manager untouched. A kind the
	// server does not serve (its CRD does not exist yet) is waited for by
	// its source, unless FailOnMissingKind.
	f := b.mgr.Factory()
	var forGVK schema.GroupVersionKind
	var forMapping *meta.RESTMapping
	all := b.allWatches()
	gvks := make([]schema.GroupVersionKind, len(all))
	mappings := make([]*meta.RESTMapping, len(all)) // nil: not served yet
	for i, w := range all {
		gvk, mapping, err := resolve(context.Background(), f, w.obj)
		if err != nil && (b.failOnMissing || !meta.IsNoMatchError(err)) {
			if meta.IsNoMatchError(err) {
				err = fmt.Errorf("%w (FailOnMissingKind: is its CRD installed?)", err)
			}
			return nil, fmt.Errorf("builder: %s(%T): %w", w.what, w.obj, err)
		}
		gvks[i], mappings[i] = gvk, mapping
		if i == 0 && b.forW != nil {
			forGVK, forMapping = gvk, mapping
		}
	}
	name := b.name
	if name == "" {
		name = strings.ToLower(forGVK.Kind)
	}
	opts := b.opts
	if opts.Logger == nil {
		opts.Logger = b.mgr.Logger()
	}
	if scopes := readScopes(all, gvks, opts.Logger); len(scopes) > 0 {
		user := opts.BaseContext
		opts.BaseContext = func(ctx context.Context) context.Context {
			if user != nil {
				if ctx = user(ctx); ctx == nil {
					return nil // the controller reports it
				}
			}
			return client.WithReadScopes(ctx, scopes)
		}
	}
	if opts.Metrics == nil {
		opts.Metrics = b.mgr.ControllerMetrics()
	}
	if opts.TracerProvider == nil {
		opts.TracerProvider = b.mgr.TracerProvider()
	}
	if opts.TracedWrites == nil {
		opts.TracedWrites = b.mgr.TracedWrites()
	}
	if opts.Observer == nil {
		opts.Observer = b.mgr.Observer()
	}
	if !opts.HotLoop.Disable && b.forW != nil {
		// The hot-loop detector's reports: an Event on the object, and
		// the other writer's managedFields from a metadata-only read.
		if opts.HotLoop.Recorder == nil {
			if rec, err := b.mgr.Recorder(name); err == nil {
				opts.HotLoop.Recorder = rec
			}
		}
		if opts.HotLoop.Get == nil {
			opts.HotLoop.Get = metadataGet(b.mgr.Client(), forGVK)
		}
	}
	if opts.QueueMetrics == nil {
		opts.QueueMetrics = b.mgr.QueueMetrics()
	}
	// The controller and its queue register their statistics under the
	// controller's name as they are made. The registrations are held until
	// every watch is made, so that a Build that fails on a watch registers
	// nothing (and a corrected Build under the same name can follow); the
	// providers refuse a name they already have, so a Build under a taken
	// name fails and never takes over the series of the controller that
	// has it.
	ctrlMetrics, queueMetrics := opts.Metrics, opts.QueueMetrics
	var heldCtrl held[controller.Stats]
	var heldQueue held[workqueue.Stats]
	opts.Metrics, opts.QueueMetrics = &heldCtrl, &heldQueue
	c, err := controller.New(name, r, opts)
	if err != nil {
		return nil, fmt.Errorf("builder: %w", err)
	}

	var kinds []kindSource
	for i, w := range all {
		fs := &followSource{
			name:       fmt.Sprintf("%s %s", w.what, gvks[i].GroupKind()),
			kinds:      []schema.GroupVersionKind{gvks[i]},
			f:          f,
			log:        opts.Logger.With("controller", name),
			failOnDrop: b.failOnMissing,
		}
		// build makes the watch's source from the mappings of fs.kinds.
		if w.what == "Owns" {
			// The owner's handler needs the For kind's scope.
			fs.kinds = []schema.GroupVersionKind{forGVK, gvks[i]}
			fs.build = func(m []*meta.RESTMapping) (droppable, error) { return b.newSource(f, w, gvks[i], m[0], opts) }
		} else {
			fs.build = func([]*meta.RESTMapping) (droppable, error) { return b.newSource(f, w, gvks[i], forMapping, opts) }
		}
		if mappings[i] != nil && (w.what != "Owns" || forMapping != nil) {
			// Served now: the informer is made at once (the factory starts
			// it with the manager).
			m := make([]*meta.RESTMapping, len(fs.kinds))
			if w.what == "Owns" {
				m[0] = forMapping
			}
			src, err := fs.build(m)
			if err != nil {
				return nil, fmt.Errorf("builder: %s(%T): %w", w.what, w.obj, err)
			}
			fs.cur = src
		}
		if err := c.Watch(fs); err != nil {
			return nil, fmt.Errorf("builder: %w", err)
		}
		kinds = append(kinds, fs)
	}
	for _, src := range b.sources {
		if err := c.Watch(src); err != nil {
			return nil, fmt.Errorf("builder: %w", err)
		}
	}
	// What fails from here on takes back the registrations made before it
	// (from providers that can, as kloop.dev/kloop/metrics's), so that no
	// series of a controller that does not run stays behind.
	var undo []func()
	failed := func(err error) (*controller.Controller, error) {
		for _, u := range slices.Backward(undo) {
			u()
		}
		return nil, err
	}
	if heldCtrl.read != nil {
		if err := ctrlMetrics.Register(heldCtrl.name, heldCtrl.read); err != nil {
			return nil, fmt.Errorf("builder: controller %q: %w", name, err)
		}
		if u, ok := ctrlMetrics.(unregisterer); ok {
			undo = append(undo, func() { u.Unregister(heldCtrl.name) })
		}
	}
	if heldQueue.read != nil {
		if err := queueMetrics.Register(heldQueue.name, heldQueue.read); err != nil {
			return failed(fmt.Errorf("builder: controller %q: %w", name, err))
		}
		if u, ok := queueMetrics.(unregisterer); ok {
			undo = append(undo, func() { u.Unregister(heldQueue.name) })
		}
	}
	if err := b.mgr.Add(c); err != nil {
		return failed(fmt.Errorf("builder: %w", err))
	}
	ready := func(*http.Request) error {
		var waiting, unsynced []string
		for _, k := range kinds {
			if w, ok := k.(interface{ Waiting() string }); ok {
				if why := w.Waiting(); why != "" {
					waiting = append(waiting, fmt.Sprintf("%s: %s", k, why))
					continue
				}
			}
			if k.Started() && !k.HasSynced() {
				unsynced = append(unsynced, fmt.Sprintf("%s (%d pending)", k, k.Pending()))
			}
		}
		if len(unsynced) > 0 {
			waiting = append(waiting, "initial list not delivered yet: "+strings.Join(unsynced, ", "))
		}
		if len(waiting) > 0 {
			return errors.New(strings.Join(waiting, "; "))
		}
		return nil
	}
	if err := b.mgr.AddReadyzCheck("controller-"+name, ready); err != nil {
		b.mgr.Logger().Warn("builder: no readiness check for the controller", "controller", name, "err", err)
	}
	return c, nil
}

// newSource makes the informer source of watch w of kind gvk; forMapping
// is the For kind's (for an Owns' owner handler).
func (b *Builder) newSource(f *informer.Factory, w watch, gvk schema.GroupVersionKind, forMapping *meta.RESTMapping, opts controller.Options) (droppable, error) {
	h := w.handler
	switch w.what {
	case "For":
		h = handler.EnqueueRequestForObject{}
	case "Owns":
		var err error
		h, err = handler.EnqueueRequestForOwner(forMapping.GroupVersionKind.GroupKind(), handler.OwnerOptions{
			AnyOwner:      w.opts.everyOwner,
			ClusterScoped: forMapping.Scope.Name() == meta.RESTScopeNameRoot,
			Logger:        opts.Logger,
		})
		if err != nil {
			return nil, err
		}
	}
	kopts := informer.SourceOptions{
		Name:       fmt.Sprintf("%s %s", w.what, gvk.GroupKind()),
		Kind:       gvk.GroupKind().String(),
		Predicates: append(append([]predicate.Predicate(nil), b.filters...), w.opts.predicates...),
	}
	kopts.Inline = inlineDelivery(w.what, kopts.Predicates)
	if w.opts.onlyMetadata {
		inf, err := f.Metadata(gvk, w.opts.scope)
		if err != nil {
			return nil, err
		}
		return informer.NewSource(inf, h, kopts)
	}
	inf, err := f.ForObject(w.obj, w.opts.scope)
	if err != nil {
		return nil, err
	}
	return informer.NewSource(inf, h, kopts)
}

// unregisterer is a metrics provider that can take a registration back
// (kloop.dev/kloop/metrics's Controller and Workqueue).
type unregisterer interface{ Unregister(name string) }

// held keeps the one registration a controller or a work queue makes (as
// controller.MetricsProvider and workqueue.MetricsProvider) until Build
// passes it on.
type held[S any] struct {
	name string
	read func(*S)
}

func (h *held[S]) Register(name string, read func(*S)) error {
	h.name, h.read = name, read
	return nil
}

// readScopes returns the scope of the reads of each kind that all of the
// controller's watches of it share (in whatever form), for the kinds whose
// shared scope is not the whole kind; nil if there is none.
func readScopes(all []watch, gvks []schema.GroupVersionKind, log *slog.Logger) client.ReadScopes {
	type kindScope struct {
		scope informer.Scope
		mixed bool // watched with two different scopes
	}
	byKind := map[schema.GroupVersionKind]*kindScope{}
	for i, w := range all {
		s := normalScope(w.opts.scope)
		switch k := byKind[gvks[i]]; {
		case k == nil:
			byKind[gvks[i]] = &kindScope{scope: s}
		case k.scope != s && !k.mixed:
			k.mixed = true
			log.Debug("builder: a kind watched with several scopes is read from the whole kind", "kind", gvks[i], "scopes", []informer.Scope{k.scope, s})
		}
	}
	var out client.ReadScopes
	for gvk, k := range byKind {
		if k.mixed || k.scope == (informer.Scope{}) {
			continue
		}
		if out == nil {
			out = client.ReadScopes{}
		}
		out[gvk] = k.scope
	}
	return out
}

// normalScope returns s with its selectors in canonical form, so that two
// spellings of one selector compare equal (the factory shares one informer
// for them). A selector that does not parse is left as is: the factory
// refuses it.
func normalScope(s informer.Scope) informer.Scope {
	if ls, err := labels.Parse(s.LabelSelector); err == nil {
		s.LabelSelector = ls.String()
	}
	if fs, err := fields.ParseSelector(s.FieldSelector); err == nil {
		s.FieldSelector = fs.String()
	}
	return s
}

func newWatch(what string, obj client.Object, h handler.EventHandler, opts []Option) watch {
	w := watch{obj: obj, handler: h, what: what}
	for _, o := range opts {
		if o != nil {
			o(&w.opts)
		}
	}
	return w
}

// allWatches returns For (first, if set), then the Owns, then the Watches.
func (b *Builder) allWatches() []watch {
	var all []watch
	if b.forW != nil {
		all = append(all, *b.forW)
	}
	all = append(all, b.owns...)
	return append(all, b.watches...)
}

// resolve returns obj's kind (a Scheme lookup for Go types, the object's own
// apiVersion and kind for unstructured and metadata-only objects) and its
// resource mapping.
func resolve(ctx context.Context, f *informer.Factory, obj client.Object) (schema.GroupVersionKind, *meta.RESTMapping, error) {
	if obj == nil || handler.IsNil(obj) {
		return schema.GroupVersionKind{}, nil, errors.New("nil object")
	}
	var gvk schema.GroupVersionKind
	switch o := obj.(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		gvk = o.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return gvk, nil, errors.New("apiVersion and kind must be set on an unstructured or metadata-only object")
		}
	default:
		gvks, _, err := f.Scheme().ObjectKinds(obj)
		if err != nil {
			return gvk, nil, fmt.Errorf("not in the manager's Scheme (add it with AddToScheme): %w", err)
		}
		if len(gvks) != 1 {
			return gvk, nil, fmt.Errorf("registered as %d kinds %v; want one", len(gvks), gvks)
		}
		gvk = gvks[0]
	}
	mapping, err := f.RESTMapping(ctx, gvk)
	if err != nil {
		return gvk, nil, err
	}
	return gvk, mapping, nil
}

// metadataGet reads the object of a request of kind gvk from the API server,
// metadata only (managedFields included): the hot-loop detector's Get.
func metadataGet(c *client.Client, gvk schema.GroupVersionKind) func(context.Context, reconcile.Request) (handler.Object, error) {
	return func(ctx context.Context, req reconcile.Request) (handler.Object, error) {
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(gvk)
		if err := c.Uncached().Get(ctx, req.NamespacedName, o); err != nil {
			return nil, err
		}
		o.SetGroupVersionKind(gvk)
		return o, nil
	}
}
