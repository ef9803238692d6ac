package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	irest "kloop.dev/kloop/internal/rest"
	"kloop.dev/kloop/reflector"
)

// Scope restricts an informer to part of a resource. The zero value is the
// whole resource.
type Scope struct {
	// Namespace restricts a namespaced resource to one namespace. Default
	// "": all namespaces. Must be "" for a cluster-scoped resource.
	Namespace string
	// LabelSelector restricts to matching objects ("app=web,tier!=db").
	// Default "": all.
	LabelSelector string
	// FieldSelector restricts by fields the server can select on
	// ("spec.nodeName=n1"). Default "": all.
	FieldSelector string
}

// FactoryOptions configures a [Factory]. The zero value works.
type FactoryOptions struct {
	// Scheme maps Go types to kinds for typed informers. Default: a new
	// scheme with every type of k8s.io/api (client-go's clientset scheme).
	// Add your CRD types to it (scheme.AddKnownTypes or your AddToScheme).
	Scheme *runtime.Scheme
	// Mapper maps kinds to resources. Default: NewDiscoveryMapper over the
	// factory's config. StaticMapper(a meta.DefaultRESTMapper) works
	// without discovery.
	Mapper Mapper
	// HTTPClient carries every list and watch of the factory's informers
	// (one connection pool). Default: rest.HTTPClientFor(cfg).
	HTTPClient *http.Client
	// Logger receives diagnostics. Default: slog.Default() (Go's convention; set slog.New(slog.DiscardHandler) to silence it).
	Logger *slog.Logger
	// Protobuf lists and watches typed and metadata-only objects in
	// protobuf (reflector.RESTOptions.Protobuf), as kube-controller-manager
	// does. Default false, unless the factory's rest.Config asks for
	// protobuf answers (its AcceptContentTypes or ContentType).
	Protobuf bool

	// ResyncPeriod, KeepManagedFields, DisableInterning, InternUpdates and
	// Transform are given to every informer: see Options. Defaults: 10 h,
	// false, false, false, none.
	ResyncPeriod      time.Duration
	KeepManagedFields bool
	DisableInterning  bool
	InternUpdates     bool
	Transform         func(obj Object) (Object, error)
	// Reflector configures every informer's list and watch. Default: the
	// zero reflector.Options.
	Reflector reflector.Options
	// DefaultNamespaces restricts the informers of namespaced kinds to
	// these namespaces, as controller-runtime's cache.Options.DefaultNamespaces:
	// for an operator whose RBAC grants it a few namespaces, which cannot
	// list the whole cluster. An informer whose Scope names no namespace
	// is a view of one informer (one list and watch) per namespace, read
	// and handled as one; a Scope naming a namespace outside them is an
	// error. Cluster-scoped kinds are not affected. ByObject overrides it
	// per kind. Default nil: all namespaces.
	DefaultNamespaces []string
	// ByObject configures the informers of some kinds, whatever their
	// version and form (typed, unstructured, metadata-only), as
	// controller-runtime's cache.Options.ByObject. Default: none.
	ByObject map[schema.GroupKind]ObjectOptions
}

// ObjectOptions configures the informers of one kind (FactoryOptions.ByObject).
// The zero value changes nothing.
type ObjectOptions struct {
	// Namespaces replaces FactoryOptions.DefaultNamespaces for the kind:
	// its informers list and watch these namespaces only. []string{""}
	// (metav1.NamespaceAll alone) is every namespace. A cluster-scoped
	// kind with Namespaces is an error when its informer is made.
	// Default nil: FactoryOptions.DefaultNamespaces.
	Namespaces []string
	// LabelSelector restricts every informer of the kind to matching
	// objects ("app=web"): a Scope's LabelSelector is added to it (both
	// must match). Objects it excludes are not cached: a cached Get of one
	// is NotFound. Default "": all.
	LabelSelector string
	// FieldSelector restricts every informer of the kind by fields the
	// server can select on ("spec.nodeName=n1"), added to a Scope's (both
	// must match). Default "": all.
	FieldSelector string
	// Transform replaces FactoryOptions.Transform for the kind. Default
	// nil: FactoryOptions.Transform.
	Transform func(obj Object) (Object, error)
}

// Errors returned (wrapped) by the Factory.
var (
	// ErrTypeMismatch: a typed view asked for a Go type other than the one
	// the shared informer decodes into.
	ErrTypeMismatch = errors.New("informer: type mismatch")
)

// form is how an informer decodes objects.
type form uint8

const (
	typedForm form = iota
	unstructuredForm
	metadataForm
)

// informerKey identifies a shared informer: exactly one per key.
type informerKey struct {
	form      form
	gvr       schema.GroupVersionResource
	namespace string
	labels    string
	fields    string
}

type factoryEntry struct {
	s       *shared
	goType  reflect.Type // of the decoded objects
	gvk     schema.GroupVersionKind
	running bool
	// cancel stops the informer's run (set by runLocked): the factory
	// drops an informer whose kind is no longer served (drop).
	cancel context.CancelFunc
}

// Factory shares informers: one informer, one watch and one cache per
// (typed / unstructured / metadata-only, resource, namespace, label
// selector, field selector), however many callers ask. Informers asked for
// before Start run when Start runs; informers asked for after Start run at
// once.
type Factory struct {
	cfg *rest.Config
	// lwCfg is cfg for the informers' listers and watchers, with one
	// client-side rate limiter that all of them share (see NewFactory).
	lwCfg  *rest.Config
	opts   FactoryOptions
	client *http.Client
	logger *slog.Logger

	started chan struct{} // closed by Start

	// mu guards informers, order, ctx, stopped and the entries' running
	// and cancel.
	mu        sync.Mutex
	informers map[informerKey]*factoryEntry
	order     []*factoryEntry
	ctx       context.Context // Start's, nil before Start
	stopped   bool
	wg        sync.WaitGroup // informer Runs
}

func (o *FactoryOptions) defaults(cfg *rest.Config) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Scheme == nil {
		o.Scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(o.Scheme); err != nil {
			return fmt.Errorf("informer: default scheme: %w", err)
		}
	}
	if o.HTTPClient == nil {
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return fmt.Errorf("informer: HTTP client for config: %w", err)
		}
		o.HTTPClient = c
	}
	if o.Mapper == nil {
		m, err := NewDiscoveryMapper(cfg, o.HTTPClient)
		if err != nil {
			return err
		}
		o.Mapper = m
	}
	return nil
}

func (o *FactoryOptions) validate() error {
	if isNil(o.Mapper) {
		return errors.New("informer: FactoryOptions.Mapper is a typed nil")
	}
	if s, ok := o.Mapper.(staticMapper); ok && isNil(s.m) {
		return errors.New("informer: FactoryOptions.Mapper is StaticMapper(nil)")
	}
	if err := checkResync("FactoryOptions.ResyncPeriod", o.ResyncPeriod); err != nil {
		return err
	}
	if err := o.Reflector.Validate(); err != nil {
		return fmt.Errorf("informer: FactoryOptions.Reflector: %w", err)
	}
	if err := checkNamespaces("FactoryOptions.DefaultNamespaces", o.DefaultNamespaces, false); err != nil {
		return err
	}
	for gk, oo := range o.ByObject {
		what := fmt.Sprintf("FactoryOptions.ByObject[%s]", gk)
		if gk.Kind == "" {
			return fmt.Errorf("informer: %s: the kind is empty", what)
		}
		if err := checkNamespaces(what+".Namespaces", oo.Namespaces, true); err != nil {
			return err
		}
		if _, err := labels.Parse(oo.LabelSelector); err != nil {
			return fmt.Errorf("informer: %s.LabelSelector %q: %w", what, oo.LabelSelector, err)
		}
		if _, err := fields.ParseSelector(oo.FieldSelector); err != nil {
			return fmt.Errorf("informer: %s.FieldSelector %q: %w", what, oo.FieldSelector, err)
		}
	}
	return nil
}

// checkNamespaces validates a list of namespaces: names, no duplicates, and
// "" (all namespaces) only alone and only where all is allowed.
func checkNamespaces(what string, nss []string, allowAll bool) error {
	if nss != nil && len(nss) == 0 {
		return fmt.Errorf("informer: %s is empty: nil means all namespaces, a list names at least one", what)
	}
	for i, ns := range nss {
		if ns == "" {
			if allowAll && len(nss) == 1 {
				continue
			}
			if allowAll {
				return fmt.Errorf("informer: %s: \"\" (all namespaces) must be alone", what)
			}
			return fmt.Errorf("informer: %s: \"\" is not a namespace (nil means all namespaces)", what)
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("informer: %s: %q is not a namespace name: %s", what, ns, strings.Join(errs, "; "))
		}
		if slices.Contains(nss[:i], ns) {
			return fmt.Errorf("informer: %s: namespace %q appears twice", what, ns)
		}
	}
	return nil
}

// NewFactory returns a Factory for the server of cfg. Nothing runs until
// Start.
//
// The lists and watches of all the factory's informers share one
// client-side rate limit, as those of a client-go informer factory share
// their clientset's: cfg.RateLimiter if set, else one token bucket of
// cfg.QPS with cfg.Burst (default 10) when QPS > 0. QPS 0 or negative: no
// limit (controller-runtime's convention).
func NewFactory(cfg *rest.Config, opts FactoryOptions) (*Factory, error) {
	if cfg == nil {
		return nil, errors.New("informer: nil rest.Config")
	}
	if err := opts.defaults(cfg); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	// Sorted copies: the views of several namespaces list them in order,
	// and the caller's slices and map stay the caller's.
	if opts.DefaultNamespaces != nil {
		opts.DefaultNamespaces = sortedNamespaces(opts.DefaultNamespaces)
	}
	if opts.ByObject != nil {
		byObject := make(map[schema.GroupKind]ObjectOptions, len(opts.ByObject))
		for gk, oo := range opts.ByObject {
			if oo.Namespaces != nil {
				oo.Namespaces = sortedNamespaces(oo.Namespaces)
			}
			byObject[gk] = oo
		}
		opts.ByObject = byObject
	}
	lwCfg := rest.CopyConfig(cfg)
	lwCfg.RateLimiter = irest.RateLimiter(cfg) // one bucket for all the informers
	return &Factory{
		cfg:       rest.CopyConfig(cfg),
		lwCfg:     lwCfg,
		opts:      opts,
		client:    opts.HTTPClient,
		logger:    opts.Logger,
		started:   make(chan struct{}),
		informers: map[informerKey]*factoryEntry{},
	}, nil
}

// Scheme returns the factory's scheme (Go type → kind).
func (f *Factory) Scheme() *runtime.Scheme { return f.opts.Scheme }

// Mapper returns the factory's mapper (kind → resource).
func (f *Factory) Mapper() Mapper { return f.opts.Mapper }

// Namespaces returns the namespaces the factory's informers of the
// namespaced kind gk hold, sorted: its ObjectOptions.Namespaces, else
// FactoryOptions.DefaultNamespaces; nil for all namespaces. The slice is
// shared: do not modify it.
func (f *Factory) Namespaces(gk schema.GroupKind) []string {
	if len(f.opts.ByObject) > 0 {
		if oo, ok := f.opts.ByObject[gk]; ok && oo.Namespaces != nil {
			if len(oo.Namespaces) == 1 && oo.Namespaces[0] == "" {
				return nil
			}
			return oo.Namespaces
		}
	}
	return f.opts.DefaultNamespaces
}

// Config returns a copy of the factory's rest.Config.
func (f *Factory) Config() *rest.Config { return rest.CopyConfig(f.cfg) }

// HTTPClient returns the HTTP client the factory's informers use.
func (f *Factory) HTTPClient() *http.Client { return f.client }

// InformerFor returns the shared informer of the Go type T (a pointer to a
// k8s.io/api struct or a CRD struct registered in the factory's Scheme)
// within scope, creating it on first use. For *unstructured.Unstructured and
// *metav1.PartialObjectMetadata use Factory.Unstructured and
// Factory.Metadata, which take the kind.
func InformerFor[T Object](f *Factory, scope Scope) (*Informer[T], error) {
	var zero T
	t := reflect.TypeFor[T]()
	switch any(zero).(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		return nil, fmt.Errorf("informer: InformerFor[%v] needs a kind: use Factory.Unstructured or Factory.Metadata", t)
	}
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("informer: InformerFor[%v]: T must be a pointer to a struct", t)
	}
	gvk, err := f.GVKForType(t)
	if err != nil {
		return nil, err
	}
	v, err := f.view(typedForm, gvk, t, scope)
	if err != nil {
		return nil, err
	}
	return &Informer[T]{s: v.s, multi: v.multi}, nil
}

// Unstructured returns the shared informer of kind gvk as
// *unstructured.Unstructured within scope, creating it on first use.
func (f *Factory) Unstructured(gvk schema.GroupVersionKind, scope Scope) (*Informer[*unstructured.Unstructured], error) {
	v, err := f.view(unstructuredForm, gvk, reflect.TypeFor[*unstructured.Unstructured](), scope)
	if err != nil {
		return nil, err
	}
	return &Informer[*unstructured.Unstructured]{s: v.s, multi: v.multi}, nil
}

// Metadata returns the shared metadata-only informer of kind gvk within
// scope, creating it on first use: the server sends only each object's
// metadata (Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1),
// the cheapest way to watch a kind whose content a controller never reads.
func (f *Factory) Metadata(gvk schema.GroupVersionKind, scope Scope) (*Informer[*metav1.PartialObjectMetadata], error) {
	v, err := f.view(metadataForm, gvk, reflect.TypeFor[*metav1.PartialObjectMetadata](), scope)
	if err != nil {
		return nil, err
	}
	return &Informer[*metav1.PartialObjectMetadata]{s: v.s, multi: v.multi}, nil
}

// ForObject returns the shared informer for objects like obj, as an
// untyped view: typed for a Go struct of the Scheme, unstructured for an
// *unstructured.Unstructured and metadata-only for a
// *metav1.PartialObjectMetadata (both must have their apiVersion and kind
// set). It is what the cached client uses.
func (f *Factory) ForObject(obj runtime.Object, scope Scope) (*Informer[Object], error) {
	if obj == nil || isNil(obj) {
		return nil, errors.New("informer: nil object")
	}
	var v view
	var err error
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		v, err = f.view(unstructuredForm, o.GroupVersionKind(), reflect.TypeOf(o), scope)
	case *metav1.PartialObjectMetadata:
		v, err = f.view(metadataForm, o.GroupVersionKind(), reflect.TypeOf(o), scope)
	default:
		t := reflect.TypeOf(obj)
		var gvk schema.GroupVersionKind
		if gvk, err = f.GVKForType(t); err == nil {
			v, err = f.view(typedForm, gvk, t, scope)
		}
	}
	if err != nil {
		return nil, err
	}
	return &Informer[Object]{s: v.s, multi: v.multi}, nil
}

// GVKForType returns the kind of the Go type t (a pointer to a struct) in
// the factory's Scheme.
func (f *Factory) GVKForType(t reflect.Type) (schema.GroupVersionKind, error) {
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return schema.GroupVersionKind{}, fmt.Errorf("informer: %v is not a pointer to a struct", t)
	}
	obj, ok := reflect.New(t.Elem()).Interface().(runtime.Object)
	if !ok {
		return schema.GroupVersionKind{}, fmt.Errorf("informer: %v is not a runtime.Object", t)
	}
	gvks, _, err := f.opts.Scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("informer: %v is not in the factory's Scheme (add it with AddKnownTypes): %w", t, err)
	}
	if len(gvks) != 1 {
		return schema.GroupVersionKind{}, fmt.Errorf("informer: %v is registered as %d kinds %v; want one", t, len(gvks), gvks)
	}
	return gvks[0], nil
}

// RESTMapping returns the resource and scope of gvk. It may ask the
// server's discovery (the default Mapper's, for a kind not cached yet), and
// then returns when ctx ends.
func (f *Factory) RESTMapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("informer: incomplete kind %q (apiVersion and kind are required)", gvk.String())
	}
	m, err := f.opts.Mapper.RESTMapping(ctx, gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("informer: mapping %s: %w", gvk, err)
	}
	return m, nil
}

// view is what an Informer[T] views: one shared informer, or one per
// namespace.
type view struct {
	s     *shared
	multi *multi
}

// view returns the informer(s) of (form, gvk's resource, scope) within the
// factory's namespaces and ByObject options, creating them if needed. Its
// callers take no ctx: a kind the mapper has not cached waits for
// discovery, which the mapper bounds (32 s by default).
func (f *Factory) view(fm form, gvk schema.GroupVersionKind, goType reflect.Type, scope Scope) (view, error) {
	mapping, err := f.RESTMapping(context.Background(), gvk)
	if err != nil {
		return view{}, err
	}
	namespaced := mapping.Scope.Name() != meta.RESTScopeNameRoot
	oo := f.opts.ByObject[gvk.GroupKind()]
	if scope.Namespace != "" && !namespaced {
		return view{}, fmt.Errorf("informer: %s is cluster-scoped: Scope.Namespace must be empty, not %q", mapping.Resource, scope.Namespace)
	}
	if oo.Namespaces != nil && !namespaced {
		return view{}, fmt.Errorf("informer: %s is cluster-scoped: FactoryOptions.ByObject[%s].Namespaces must be nil", mapping.Resource, gvk.GroupKind())
	}
	scope.LabelSelector = andSelectors(oo.LabelSelector, scope.LabelSelector)
	scope.FieldSelector = andSelectors(oo.FieldSelector, scope.FieldSelector)
	ls, err := labels.Parse(scope.LabelSelector)
	if err != nil {
		return view{}, fmt.Errorf("informer: invalid label selector %q: %w", scope.LabelSelector, err)
	}
	fs, err := fields.ParseSelector(scope.FieldSelector)
	if err != nil {
		return view{}, fmt.Errorf("informer: invalid field selector %q: %w", scope.FieldSelector, err)
	}
	transform := f.opts.Transform
	if oo.Transform != nil {
		transform = oo.Transform
	}
	var nss []string
	if namespaced {
		nss = f.Namespaces(gvk.GroupKind())
	}
	if nss == nil { // all namespaces: the scope's own (one, or all)
		e, err := f.entry(fm, gvk, goType, mapping, scope, ls, fs, transform)
		if err != nil {
			return view{}, err
		}
		return view{s: e.s}, nil
	}
	ns := scope.Namespace
	if fsNS, ok := fs.RequiresExactMatch("metadata.namespace"); ok {
		if !slices.Contains(nss, fsNS) {
			return view{}, fmt.Errorf("informer: %s with field selector %q: the factory holds namespaces %q only (FactoryOptions.DefaultNamespaces or ByObject)",
				mapping.Resource, scope.FieldSelector, nss)
		}
		if ns == "" {
			ns = fsNS
		}
	}
	if ns == "" && len(nss) == 1 {
		ns = nss[0]
	}
	if ns != "" {
		if !slices.Contains(nss, ns) {
			return view{}, fmt.Errorf("informer: %s in namespace %q: the factory holds namespaces %q only (FactoryOptions.DefaultNamespaces or ByObject)",
				mapping.Resource, ns, nss)
		}
		scope.Namespace = ns
		e, err := f.entry(fm, gvk, goType, mapping, scope, ls, fs, transform)
		if err != nil {
			return view{}, err
		}
		return view{s: e.s}, nil
	}
	parts := make([]*shared, len(nss))
	for i, ns := range nss {
		scope.Namespace = ns
		e, err := f.entry(fm, gvk, goType, mapping, scope, ls, fs, transform)
		if err != nil {
			return view{}, err
		}
		parts[i] = e.s
	}
	return view{multi: newMulti(nss, parts)}, nil
}

// andSelectors returns the selector matching both a and b ("" for all).
func andSelectors(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}

// entry returns the informer of key (form, resource, scope of one
// namespace or all), creating it if needed.
func (f *Factory) entry(fm form, gvk schema.GroupVersionKind, goType reflect.Type, mapping *meta.RESTMapping, scope Scope, ls labels.Selector, fs fields.Selector, transform func(Object) (Object, error)) (*factoryEntry, error) {
	key := informerKey{form: fm, gvr: mapping.Resource, namespace: scope.Namespace, labels: ls.String(), fields: fs.String()}

	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.informers[key]; e != nil {
		if e.goType != goType {
			return nil, fmt.Errorf("%w: the informer of %s decodes into %v, not %v", ErrTypeMismatch, mapping.Resource, e.goType, goType)
		}
		return e, nil
	}
	if f.stopped {
		return nil, fmt.Errorf("informer: factory: %w", ErrStopped)
	}
	elem := goType.Elem()
	newObj := func() Object {
		o := reflect.New(elem).Interface().(Object)
		return o
	}
	if fm == metadataForm {
		newObj = func() Object { return &metav1.PartialObjectMetadata{} }
	}
	lw, err := reflector.NewRESTListerWatcher[Object](f.lwCfg, mapping.Resource, scope.Namespace, reflector.RESTOptions[Object]{
		LabelSelector: key.labels,
		FieldSelector: key.fields,
		New:           newObj,
		HTTPClient:    f.client,
		// The cache strips them (before any Transform): skip them while
		// decoding instead.
		DropManagedFields: !f.opts.KeepManagedFields,
		Protobuf:          f.opts.Protobuf,
	})
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	name := mapping.Resource.String()
	if scope != (Scope{}) {
		name = fmt.Sprintf("%s(%s|%s|%s)", name, scope.Namespace, key.labels, key.fields)
	}
	if fm == unstructuredForm || fm == metadataForm {
		// Objects decoded from a list lack kind and apiVersion in some
		// forms; set the kind so that every cached object carries it.
		user := transform
		transform = func(o Object) (Object, error) {
			if o.GetObjectKind().GroupVersionKind().Empty() || fm == metadataForm {
				o.GetObjectKind().SetGroupVersionKind(gvk)
			}
			if user != nil {
				return user(o)
			}
			return o, nil
		}
	}
	s, err := newShared(&kindLW{ListerWatcher: lw, f: f, gvk: gvk, gvr: mapping.Resource}, sharedOptions{
		name:      name,
		logger:    f.logger,
		lean:      newLean(f.opts.KeepManagedFields, f.opts.DisableInterning, f.opts.InternUpdates, transform, f.logger),
		resync:    resyncDefault(f.opts.ResyncPeriod),
		reflector: withName(f.opts.Reflector, name, f.logger),
	})
	if err != nil {
		return nil, err
	}
	s.dropped = make(chan struct{})
	e := &factoryEntry{s: s, goType: goType, gvk: gvk}
	f.informers[key] = e
	f.order = append(f.order, e)
	if f.ctx != nil {
		f.runLocked(e)
	}
	f.logger.Debug("informer: created", "informer", name)
	return e, nil
}

func resyncDefault(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultResyncPeriod
	}
	return d
}

func withName(o reflector.Options, name string, logger *slog.Logger) reflector.Options {
	if o.Name == "" {
		o.Name = name
	}
	if o.Logger == nil {
		o.Logger = logger
	}
	return o
}

// runLocked starts e; f.mu is held and f.ctx set.
func (f *Factory) runLocked(e *factoryEntry) {
	if e.running {
		return
	}
	e.running = true
	f.wg.Add(1)
	ctx, cancel := context.WithCancel(f.ctx)
	e.cancel = cancel
	go func() {
		defer cancel()
		defer f.wg.Done()
		if err := e.s.run(ctx); err != nil {
			f.logger.Error("informer: run", "err", err)
		}
	}()
}

// Start runs every informer of the factory — those created so far and those
// created later — until ctx is cancelled, then waits for them to stop and
// returns nil. It is an error to call it twice.
func (f *Factory) Start(ctx context.Context) error {
	f.mu.Lock()
	if f.ctx != nil || f.stopped {
		f.mu.Unlock()
		return errors.New("informer: Factory.Start called more than once")
	}
	f.ctx = ctx
	for _, e := range f.order {
		f.runLocked(e)
	}
	close(f.started)
	f.mu.Unlock()
	<-ctx.Done()
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

// NumInformers returns the number of informers the factory holds.
func (f *Factory) NumInformers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.order)
}

// WaitForStart blocks until Start has been called or ctx is done.
func (f *Factory) WaitForStart(ctx context.Context) error {
	select {
	case <-f.started:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("informer: waiting for Factory.Start: %w", ctx.Err())
	}
}

// WaitForCacheSync blocks until every informer created so far has its
// initial list in its cache, or ctx is done (it then returns ctx's error,
// wrapped), or Start's context ended before they synced (ErrStopped,
// wrapped). It waits for Start first.
func (f *Factory) WaitForCacheSync(ctx context.Context) error {
	if err := f.WaitForStart(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	entries := append([]*factoryEntry(nil), f.order...)
	f.mu.Unlock()
	for _, e := range entries {
		if err := e.s.waitForSync(ctx); err != nil {
			return err
		}
	}
	return nil
}
