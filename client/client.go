package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/informer"
	irest "kloop.dev/kloop/internal/rest"
)

// Object is a Kubernetes object: a pointer to a k8s.io/api or CRD struct,
// *unstructured.Unstructured or *metav1.PartialObjectMetadata.
type Object interface {
	metav1.Object
	runtime.Object
}

// ObjectList is a list of Kubernetes objects (*corev1.PodList,
// *unstructured.UnstructuredList, *metav1.PartialObjectMetadataList…).
type ObjectList interface {
	metav1.ListInterface
	runtime.Object
}

// ObjectKey names an object: namespace ("" for cluster-scoped) and name.
type ObjectKey = types.NamespacedName

// KeyOf returns obj's key.
func KeyOf(obj metav1.Object) ObjectKey {
	return ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Reader reads objects.
type Reader interface {
	// Get fills obj with the object named key. A missing object is an
	// error for which apierrors.IsNotFound is true.
	Get(ctx context.Context, key ObjectKey, obj Object) error
	// List fills list with the objects matching opts.
	List(ctx context.Context, list ObjectList, opts ...ListOption) error
}

// Options configures a [Client]. The zero value works: every read goes to
// the API server.
type Options struct {
	// Factory serves reads from its informers' caches: the first Get or
	// List of a kind starts an informer for the whole kind (all
	// namespaces) — or for its scope, with ReadScopes in the context — and
	// waits for its sync (and for Factory.Start). Default nil: reads go to
	// the API server.
	Factory *informer.Factory
	// Uncached lists kinds (by example object, such as &corev1.Secret{})
	// always read from the API server even with a Factory. Default: none.
	Uncached []Object
	// Scheme maps Go types to kinds. Default: the Factory's, else a scheme
	// with every type of k8s.io/api.
	Scheme *runtime.Scheme
	// Mapper maps kinds to resources. Default: the Factory's, else
	// informer.NewDiscoveryMapper.
	Mapper informer.Mapper
	// HTTPClient sends requests. Default: the Factory's, else
	// rest.HTTPClientFor(cfg).
	HTTPClient *http.Client
	// FieldOwner is the field manager of writes that do not name one.
	// Default "": the server derives one from the user agent.
	FieldOwner string
	// Logger receives diagnostics. Default: slog.Default() (Go's convention; set slog.New(slog.DiscardHandler) to silence it).
	Logger *slog.Logger

	// DisableReadYourOwnWrites turns off read-your-own-writes. By default
	// the client remembers the resourceVersion each of its writes of a
	// cached kind returned (create, update, patch, apply, status, delete —
	// for a delete, that the object is gone), and a cached Get of that
	// object, or List of that kind, waits until the cache has caught up
	// with the write, at most ReadYourOwnWritesTimeout after it; then the
	// read goes on with the cache as it is, logs a warning and counts a
	// stale read (MetricsProvider.ReadWaited). See the package documentation.
	// Default false.
	DisableReadYourOwnWrites bool
	// ReadYourOwnWritesTimeout bounds how long after a write the reads
	// that follow it wait for the cache. Default
	// DefaultReadYourOwnWritesTimeout (3 s).
	ReadYourOwnWritesTimeout time.Duration
	// Metrics receives the client's statistics (waits for the cache, stale
	// reads). Default: none.
	Metrics MetricsProvider
	// TracerProvider, when set, makes each request of the client an
	// OpenTelemetry span ("<VERB> <resource>", child of the span in the
	// request's context: a traced reconcile's), by wrapping HTTPClient's
	// transport. Leave it nil when that transport is traced already: a
	// manager's client's is (manager.Options.TracerProvider). A traced
	// reconcile's writes carry their span either way. Default nil: no
	// tracing.
	TracerProvider trace.TracerProvider
}

// Client reads objects from the informer cache (or the API server) and
// writes them to the API server. It is safe for concurrent use.
type Client struct {
	factory    *informer.Factory
	scheme     *runtime.Scheme
	mapper     informer.Mapper
	http       *http.Client
	base       *url.URL
	userAgent  string
	fieldOwner string
	logger     *slog.Logger
	uncached   map[schema.GroupVersionKind]bool
	// limiter is waited on before each request, retries included:
	// cfg's client-side rate limit as client-go's REST client applies it
	// (irest.RateLimiter: cfg.RateLimiter, or a QPS/Burst token bucket;
	// QPS 0 or negative: none, as with controller-runtime's config since
	// v0.21); nil: none.
	limiter flowcontrol.RateLimiter
	// indexes are the field indexes of IndexField.
	indexes fieldIndexes
	// synced holds the informers reads have found synced, by
	// informerKey: a read of the same kind, form and scope goes to its
	// informer at once.
	synced sync.Map // informerKey → *informer.Informer[informer.Object]
	// writes remembers the client's own writes for the reads that follow
	// them (nil: read-your-own-writes is off, or nothing is cached).
	writes  *writeLog
	metrics MetricsProvider // Options.Metrics; nil: none
}

func (o *Options) defaults(cfg *rest.Config) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if f := o.Factory; f != nil {
		if o.Scheme == nil {
			o.Scheme = f.Scheme()
		}
		if o.Mapper == nil {
			o.Mapper = f.Mapper()
		}
		if o.HTTPClient == nil {
			o.HTTPClient = f.HTTPClient()
		}
	}
	if o.Scheme == nil {
		o.Scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(o.Scheme); err != nil {
			return fmt.Errorf("client: default scheme: %w", err)
		}
	}
	if o.HTTPClient == nil {
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return fmt.Errorf("client: HTTP client for config: %w", err)
		}
		o.HTTPClient = c
	}
	if o.TracerProvider != nil {
		traced := *o.HTTPClient
		traced.Transport = irest.NewTracing(o.TracerProvider).Transport(traced.Transport)
		o.HTTPClient = &traced
	}
	if o.Mapper == nil {
		m, err := informer.NewDiscoveryMapper(cfg, o.HTTPClient)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		o.Mapper = m
	}
	return nil
}

func (o *Options) validate() error {
	if o.ReadYourOwnWritesTimeout < 0 {
		return fmt.Errorf("client: Options.ReadYourOwnWritesTimeout %s is negative", o.ReadYourOwnWritesTimeout)
	}
	for i, u := range o.Uncached {
		if v := reflect.ValueOf(u); u == nil || v.Kind() == reflect.Pointer && v.IsNil() {
			return fmt.Errorf("client: Options.Uncached[%d] is nil", i)
		}
	}
	if o.Factory != nil && o.Factory.Scheme() != o.Scheme {
		return errors.New("client: Options.Scheme differs from the Factory's: the cache would decode other types than the client reads")
	}
	return nil
}

// New returns a Client for the server of cfg.
func New(cfg *rest.Config, opts Options) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("client: nil rest.Config")
	}
	if err := opts.defaults(cfg); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	base, err := irest.BaseURL(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: server URL: %w", err)
	}
	c := &Client{
		factory:    opts.Factory,
		scheme:     opts.Scheme,
		mapper:     opts.Mapper,
		http:       opts.HTTPClient,
		base:       base,
		userAgent:  irest.UserAgent(cfg),
		fieldOwner: opts.FieldOwner,
		logger:     opts.Logger,
		uncached:   map[schema.GroupVersionKind]bool{},
		limiter:    irest.RateLimiter(cfg),
	}
	for _, o := range opts.Uncached {
		gvk, err := c.gvkFor(o)
		if err != nil {
			return nil, fmt.Errorf("client: Options.Uncached: %w", err)
		}
		c.uncached[gvk] = true
	}
	if c.factory != nil && !opts.DisableReadYourOwnWrites {
		timeout := opts.ReadYourOwnWritesTimeout
		if timeout == 0 {
			timeout = DefaultReadYourOwnWritesTimeout
		}
		c.writes = newWriteLog(timeout)
	}
	c.metrics = opts.Metrics
	return c, nil
}

// Scheme returns the client's scheme.
func (c *Client) Scheme() *runtime.Scheme { return c.scheme }

// Uncached returns a Reader that always reads from the API server: for a
// read that must see the latest write (at the cost of a request).
func (c *Client) Uncached() Reader { return apiReader{c} }

// gvkFor returns obj's kind: the apiVersion and kind it carries for
// unstructured and metadata-only objects, the Scheme's for typed ones.
func (c *Client) gvkFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	if isNil(obj) {
		return schema.GroupVersionKind{}, fmt.Errorf("client: nil object (%T)", obj)
	}
	switch obj.(type) {
	case *unstructured.Unstructured, *unstructured.UnstructuredList,
		*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return gvk, fmt.Errorf("client: %T without apiVersion and kind", obj)
		}
		return gvk, nil
	}
	gvks, _, err := c.scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("client: %T is not in the client's Scheme: %w", obj, err)
	}
	if len(gvks) != 1 {
		return schema.GroupVersionKind{}, fmt.Errorf("client: %T is registered as %d kinds %v; want one", obj, len(gvks), gvks)
	}
	return gvks[0], nil
}

// mapping returns gvk's resource and scope: from the mapper's cache
// without a lock, or, for a kind it does not know yet, from discovery
// within ctx.
func (c *Client) mapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(ctx, gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("client: mapping %s: %w", gvk, err)
	}
	return m, nil
}

// cached reports whether reads of gvk are served from the cache.
func (c *Client) cached(gvk schema.GroupVersionKind) bool {
	return c.factory != nil && !c.uncached[gvk]
}

// Get fills obj with the object named key: a deep copy of the cached
// object (the caller may modify it) when the kind is cached, else the
// server's answer. With ReadScopes in ctx (a controller's reconcile with
// builder.WithScope), a cached kind is read from the informer of its scope
// and an object outside the scope is NotFound — or, in another namespace
// than the ones the scope (or FactoryOptions.DefaultNamespaces) holds, an
// error wrapping ErrOutOfScope: see WithReadScopes.
func (c *Client) Get(ctx context.Context, key ObjectKey, obj Object) error {
	gvk, err := c.gvkFor(obj)
	if err != nil {
		return err
	}
	if !c.cached(gvk) {
		return apiReader{c}.Get(ctx, key, obj)
	}
	m, err := c.mapping(ctx, gvk)
	if err != nil {
		return err
	}
	scope := readScope(ctx, gvk)
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		key.Namespace = "" // as the server (and url) ignore it
	} else if ns := scopeNamespace(scope); ns != "" {
		if key.Namespace != ns {
			return outOfScopeGet(m, key, []string{ns})
		}
	} else if nss := c.factory.Namespaces(gvk.GroupKind()); nss != nil {
		// The factory holds these namespaces, one informer each: read the
		// key's.
		if !slices.Contains(nss, key.Namespace) {
			return outOfScopeGet(m, key, nss)
		}
		scope.Namespace = key.Namespace
	}
	inf, err := c.informerFor(ctx, gvk, obj, scope)
	if err != nil {
		return err
	}
	if err := c.awaitGet(ctx, gvk, key, inf); err != nil {
		return err
	}
	cached, ok := inf.Get(key.Namespace, key.Name)
	if !ok {
		return apierrors.NewNotFound(m.Resource.GroupResource(), key.Name)
	}
	if err := copyInto(obj, cached.DeepCopyObject()); err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// isNil reports whether obj is nil or a nil pointer (such as a nil *corev1.Pod).
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// informerKey names an informer the client reads: a kind, the Go type of
// its objects (typed, unstructured or metadata-only) and a scope.
type informerKey struct {
	gvk   schema.GroupVersionKind
	t     reflect.Type
	scope informer.Scope
}

// informerFor returns the synced informer of obj's kind (gvk) and form
// within scope, starting it on first use. Once an informer has synced, the
// client keeps it: later reads skip the factory's lookup and the waits.
func (c *Client) informerFor(ctx context.Context, gvk schema.GroupVersionKind, obj Object, scope informer.Scope) (*informer.Informer[informer.Object], error) {
	key := informerKey{gvk: gvk, t: reflect.TypeOf(obj), scope: scope}
	if v, ok := c.synced.Load(key); ok {
		inf := v.(*informer.Informer[informer.Object])
		if !informer.IsDropped(inf) {
			if err := c.index(inf, gvk, obj); err != nil {
				return nil, err
			}
			return inf, nil
		}
		// Its kind stopped being served (a CRD deleted): ask the factory,
		// which answers with a new informer once the kind is back.
		c.synced.CompareAndDelete(key, v)
	}
	inf, err := c.factory.ForObject(obj, scope)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := c.index(inf, gvk, obj); err != nil {
		return nil, err
	}
	if err := c.factory.WaitForStart(ctx); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := inf.WaitForCacheSync(ctx); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.synced.Store(key, inf)
	return inf, nil
}

// copyInto sets *dst = *src for two pointers to the same struct type.
func copyInto(dst, src runtime.Object) error {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Type() != sv.Type() || dv.Kind() != reflect.Pointer || dv.IsNil() {
		return fmt.Errorf("client: cannot copy %T into %T", src, dst)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}

// itemOf returns an empty item of list and the item's kind.
func (c *Client) itemOf(list ObjectList) (Object, schema.GroupVersionKind, error) {
	gvk, err := c.gvkFor(list)
	if err != nil {
		return nil, gvk, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	switch list.(type) {
	case *unstructured.UnstructuredList:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, gvk, nil
	case *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m, gvk, nil
	}
	o, err := c.scheme.New(gvk)
	if err != nil {
		return nil, gvk, fmt.Errorf("client: item of %T: %w", list, err)
	}
	item, ok := o.(Object)
	if !ok {
		return nil, gvk, fmt.Errorf("client: item of %T (%T) has no metadata", list, o)
	}
	return item, gvk, nil
}

// List fills list with the matching objects, sorted by namespace and name:
// deep copies of cached objects when the kind is cached, else the server's
// answer. A cached List has no resourceVersion (as controller-runtime's)
// and does not paginate: one cut by Limit has a Continue token that a
// cached List refuses. With ReadScopes in ctx, a cached kind lists only its
// scope, and a namespace outside the scope is an error wrapping
// ErrOutOfScope: see WithReadScopes.
func (c *Client) List(ctx context.Context, list ObjectList, opts ...ListOption) error {
	item, gvk, err := c.itemOf(list)
	if err != nil {
		return err
	}
	if !c.cached(gvk) {
		return apiReader{c}.List(ctx, list, opts...)
	}
	var o ListOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.Continue != "" {
		return apierrors.NewBadRequest("client: a cached List does not paginate (Continue): list without Limit, or use Uncached()")
	}
	m, err := c.mapping(ctx, gvk)
	if err != nil {
		return err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		o.Namespace = "" // as the server (and url) ignore it
	}
	scope := readScope(ctx, gvk)
	// namespaces are the informers to read, by namespace: nil for the one
	// of scope.
	var namespaces []string
	if ns := scopeNamespace(scope); ns != "" {
		if err := checkListScope(m, []string{ns}, o); err != nil {
			return err
		}
	} else if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if nss := c.factory.Namespaces(gvk.GroupKind()); nss != nil {
			if err := checkListScope(m, nss, o); err != nil {
				return err
			}
			if ns := listNamespace(o); ns != "" {
				scope.Namespace = ns
			} else {
				namespaces = nss // several, or one
			}
		}
	}
	var objs []informer.Object
	if namespaces == nil {
		inf, err := c.informerFor(ctx, gvk, item, scope)
		if err != nil {
			return err
		}
		ns := scope.Namespace
		if ns == "" {
			ns = listNamespace(o)
		}
		if err := c.awaitList(ctx, gvk, ns, inf); err != nil {
			return err
		}
		if objs, err = selectCached(inf, o); err != nil {
			return err
		}
	}
	// A List of several namespaces merges the lists of their informers.
	for _, ns := range namespaces {
		scope.Namespace = ns
		inf, err := c.informerFor(ctx, gvk, item, scope)
		if err != nil {
			return err
		}
		if err := c.awaitList(ctx, gvk, ns, inf); err != nil {
			return err
		}
		more, err := selectCached(inf, o)
		if err != nil {
			return err
		}
		objs = append(objs, more...)
	}
	slices.SortFunc(objs, func(a, b informer.Object) int {
		if n := strings.Compare(a.GetNamespace(), b.GetNamespace()); n != 0 {
			return n
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	more := ""
	if o.Limit > 0 && int64(len(objs)) > o.Limit {
		objs = objs[:o.Limit]
		more = cacheContinue
	}
	out := make([]runtime.Object, len(objs))
	for i, obj := range objs {
		cp := obj.DeepCopyObject()
		cp.GetObjectKind().SetGroupVersionKind(gvk)
		out[i] = cp
	}
	if err := meta.SetList(list, out); err != nil {
		return fmt.Errorf("client: filling %T: %w", list, err)
	}
	// No resourceVersion: the reflector's is ahead of the cache while the
	// informer applies what the watch brought, and a list at version X must
	// hold every change up to X (to watch from it, list Uncached()).
	list.SetResourceVersion("")
	list.SetContinue(more)
	return nil
}

// cacheContinue is the Continue of a cached List cut by Limit: it tells a
// pagination loop that the list is incomplete, and a cached List refuses it
// (as any Continue), so the loop fails instead of missing objects.
const cacheContinue = "kloop-cache-does-not-paginate"

// selectsNothing reports whether o has a selector that matches no object:
// labels.Nothing() (what metav1.LabelSelectorAsSelector makes of a nil
// selector) or fields.Nothing(). Their String() is "", which the server
// reads as "everything", so such a List is answered without it.
func selectsNothing(o ListOptions) bool {
	if o.LabelSelector != nil && labels.MatchesNothing(o.LabelSelector) {
		return true
	}
	return o.FieldSelector != nil && !o.FieldSelector.Empty() && len(o.FieldSelector.Requirements()) == 0
}

// selectCached returns the cached objects matching o (shared: not copied).
func selectCached(inf *informer.Informer[informer.Object], o ListOptions) ([]informer.Object, error) {
	if selectsNothing(o) {
		return nil, nil
	}
	var objs []informer.Object
	// name and ns hold when set (an empty value selects an empty field: no
	// object has an empty name; cluster-scoped objects have no namespace).
	var name string
	var nameSet bool
	ns := o.Namespace
	nsSet := ns != ""
	var indexed []struct{ field, value string }
	if o.FieldSelector != nil && !o.FieldSelector.Empty() {
		for _, r := range o.FieldSelector.Requirements() {
			if r.Operator != "=" && r.Operator != "==" {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("client: a cached List selects fields with = only, not %q", r.Operator))
			}
			switch r.Field {
			case "metadata.name":
				if nameSet && name != r.Value {
					return nil, nil // two names: nothing matches both
				}
				name, nameSet = r.Value, true
			case "metadata.namespace":
				if nsSet && ns != r.Value {
					return nil, nil
				}
				ns, nsSet = r.Value, true
			default:
				if !inf.HasIndex("field:" + r.Field) {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("client: field %q is not indexed in the cache (index it with Client.IndexField, or read it with Uncached())", r.Field))
				}
				indexed = append(indexed, struct{ field, value string }{r.Field, r.Value})
			}
		}
	}
	switch {
	case len(indexed) > 0:
		var err error
		if objs, err = inf.ByIndex("field:"+indexed[0].field, indexed[0].value); err != nil {
			return nil, err
		}
	case nameSet && nsSet:
		if obj, ok := inf.Get(ns, name); ok {
			objs = []informer.Object{obj}
		}
	case nsSet:
		objs = inf.ListNamespace(ns)
	default:
		objs = inf.List()
	}
	// The buckets of the other indexed fields, each read once.
	var also []map[objectName]struct{}
	for _, r := range indexed[min(1, len(indexed)):] {
		bucket, err := inf.ByIndex("field:"+r.field, r.value)
		if err != nil {
			return nil, err
		}
		names := make(map[objectName]struct{}, len(bucket))
		for _, o := range bucket {
			names[objectName{o.GetNamespace(), o.GetName()}] = struct{}{}
		}
		also = append(also, names)
	}
	out := objs[:0]
	for _, obj := range objs {
		if nsSet && obj.GetNamespace() != ns || nameSet && obj.GetName() != name {
			continue
		}
		if o.LabelSelector != nil && !o.LabelSelector.Empty() && !o.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		if len(also) > 0 && !inAll(also, objectName{obj.GetNamespace(), obj.GetName()}) {
			continue
		}
		out = append(out, obj)
	}
	return out, nil
}

// objectName is an object's namespace and name.
type objectName struct{ namespace, name string }

// inAll reports whether every set holds n.
func inAll(sets []map[objectName]struct{}, n objectName) bool {
	for _, set := range sets {
		if _, ok := set[n]; !ok {
			return false
		}
	}
	return true
}

// apiReader reads from the API server.
type apiReader struct{ c *Client }

func (r apiReader) Get(ctx context.Context, key ObjectKey, obj Object) error {
	c := r.c
	gvk, err := c.gvkFor(obj)
	if err != nil {
		return err
	}
	if key.Name == "" { // the URL would be the collection's
		return apierrors.NewBadRequest("client: resource name may not be empty")
	}
	m, err := c.mapping(ctx, gvk)
	if err != nil {
		return err
	}
	u, err := c.url(m, key.Namespace, key.Name, "")
	if err != nil {
		return err
	}
	body, err := c.do(ctx, http.MethodGet, u, acceptFor(obj, false), "", nil, m)
	if err != nil {
		return err
	}
	return decodeInto(body, obj, gvk)
}

func (r apiReader) List(ctx context.Context, list ObjectList, opts ...ListOption) error {
	c := r.c
	_, gvk, err := c.itemOf(list)
	if err != nil {
		return err
	}
	listGVK, err := c.gvkFor(list)
	if err != nil {
		return err
	}
	var o ListOptions
	for _, opt := range opts {
		opt(&o)
	}
	m, err := c.mapping(ctx, gvk)
	if err != nil {
		return err
	}
	u, err := c.url(m, o.Namespace, "", "")
	if err != nil {
		return err
	}
	if selectsNothing(o) {
		if err := meta.SetList(list, nil); err != nil {
			return fmt.Errorf("client: filling %T: %w", list, err)
		}
		list.GetObjectKind().SetGroupVersionKind(listGVK)
		list.SetResourceVersion("")
		list.SetContinue("")
		return nil
	}
	q := url.Values{}
	if o.LabelSelector != nil && !o.LabelSelector.Empty() {
		q.Set("labelSelector", o.LabelSelector.String())
	}
	if o.FieldSelector != nil && !o.FieldSelector.Empty() {
		q.Set("fieldSelector", o.FieldSelector.String())
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.FormatInt(o.Limit, 10))
	}
	if o.Continue != "" {
		q.Set("continue", o.Continue)
	}
	u.RawQuery = q.Encode()
	body, err := c.do(ctx, http.MethodGet, u, acceptFor(list, true), "", nil, m)
	if err != nil {
		return err
	}
	if err := decodeInto(body, list, listGVK); err != nil {
		return err
	}
	if ul, ok := list.(*unstructured.UnstructuredList); ok {
		for i := range ul.Items {
			if ul.Items[i].GetKind() == "" {
				ul.Items[i].SetGroupVersionKind(gvk)
			}
		}
	}
	if pl, ok := list.(*metav1.PartialObjectMetadataList); ok {
		for i := range pl.Items {
			pl.Items[i].SetGroupVersionKind(gvk)
		}
	}
	return nil
}

func acceptFor(obj runtime.Object, list bool) string {
	switch obj.(type) {
	case *metav1.PartialObjectMetadata:
		return "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
	case *metav1.PartialObjectMetadataList:
		return "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	}
	return "application/json"
}

// decodeInto replaces obj's content by the JSON in body, and keeps gvk as
// its kind (a metadata-only answer says PartialObjectMetadata).
func decodeInto(body []byte, obj runtime.Object, gvk schema.GroupVersionKind) error {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("client: cannot decode into %T", obj)
	}
	v.Elem().Set(reflect.Zero(v.Elem().Type()))
	if err := json.Unmarshal(body, obj); err != nil {
		return fmt.Errorf("client: decoding %s into %T: %w", gvk.Kind, obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// url returns the URL of a collection (name "") or an object, with an
// optional subresource. Namespace and name are escaped once (the server
// decodes them back); ones that cannot be a path segment (".", "..", or
// with a '/' or '%') are a BadRequest, as in client-go.
func (c *Client) url(m *meta.RESTMapping, namespace, name, sub string) (*url.URL, error) {
	gv := m.Resource.GroupVersion()
	segs := []string{"apis", gv.Group, gv.Version}
	if gv.Group == "" {
		segs = []string{"api", gv.Version}
	}
	// A cluster-scoped resource ignores the namespace, as controller-runtime
	// does (and kube-apiserver clears metadata.namespace of such objects).
	namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case namespaced && namespace != "":
		if msgs := pathvalidation.IsValidPathSegmentName(namespace); len(msgs) != 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("client: invalid namespace %q: %s", namespace, strings.Join(msgs, "; ")))
		}
		segs = append(segs, "namespaces", namespace)
	case namespaced && name != "":
		return nil, apierrors.NewBadRequest(fmt.Sprintf("client: %s is namespaced: the object needs a namespace", m.Resource.GroupResource()))
	}
	segs = append(segs, m.Resource.Resource)
	if name != "" {
		if msgs := pathvalidation.IsValidPathSegmentName(name); len(msgs) != 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("client: invalid name %q: %s", name, strings.Join(msgs, "; ")))
		}
		segs = append(segs, name)
	} else if sub != "" {
		return nil, apierrors.NewBadRequest("client: object name is required")
	}
	if sub != "" {
		segs = append(segs, sub)
	}
	u := *c.base
	p, rp := strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.EscapedPath(), "/")
	for _, s := range segs {
		p += "/" + s
		rp += "/" + url.PathEscape(s)
	}
	u.Path, u.RawPath = p, rp
	return &u, nil
}

// maxBody bounds the responses read (objects are at most a few MiB).
const maxBody = 256 << 20

// do sends a request and returns the response body of a 2xx answer; any
// other answer is a *apierrors.StatusError (irest.DecodeError: the Status
// the server sent, Retry-After in Details.RetryAfterSeconds).
//
// As client-go's REST client, an answer 429 (Too Many Requests: API
// Priority and Fairness) or 5xx that carries a Retry-After header
// (delay-seconds or an HTTP-date) is retried after that wait, up to
// irest.MaxRetries times; the last answer's error is returned when they run
// out, ctx's when it ends first (irest.Retry).
func (c *Client) do(ctx context.Context, method string, u *url.URL, accept, contentType string, body []byte, m *meta.RESTMapping) ([]byte, error) {
	return irest.Retry(ctx, "client: "+method+" "+u.Path, c.limiter, func(ctx context.Context) ([]byte, time.Duration, error) {
		return c.doOnce(ctx, method, u, accept, contentType, body, m)
	})
}

// doOnce sends a request once. wait is how long to wait before retrying it
// (irest.RetryWait), negative when it is not to be retried.
func (c *Client) doOnce(ctx context.Context, method string, u *url.URL, accept, contentType string, body []byte, m *meta.RESTMapping) (data []byte, wait time.Duration, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, -1, fmt.Errorf("client: %s %s: %w", method, u.Path, err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, -1, fmt.Errorf("client: %s %s: %w", method, u.Path, err)
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, -1, fmt.Errorf("client: %s %s: reading the answer: %w", method, u.Path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, -1, nil
	}
	now := time.Now()
	return nil, irest.RetryWait(resp.StatusCode, resp.Header, now),
		irest.DecodeError(resp.StatusCode, resp.Header, data, strings.ToLower(method), m.Resource.GroupResource(), now)
}

// target returns what a write of obj goes to: its kind, mapping and URL —
// its collection's, or (collection false) its own, with an optional
// subresource; an object without a name is a BadRequest then.
func (c *Client) target(ctx context.Context, obj Object, sub string, collection bool) (schema.GroupVersionKind, *meta.RESTMapping, *url.URL, error) {
	gvk, err := c.gvkFor(obj)
	if err != nil {
		return gvk, nil, nil, err
	}
	m, err := c.mapping(ctx, gvk)
	if err != nil {
		return gvk, nil, nil, err
	}
	name := obj.GetName()
	if collection {
		name = ""
	} else if name == "" {
		return gvk, nil, nil, apierrors.NewBadRequest("client: the object has no name")
	}
	u, err := c.url(m, obj.GetNamespace(), name, sub)
	return gvk, m, u, err
}

// write sends obj (or a patch) and decodes the answer into obj.
func (c *Client) write(ctx context.Context, method string, obj Object, sub string, collection bool, contentType string, body []byte, q url.Values) error {
	gvk, m, u, err := c.target(ctx, obj, sub, collection)
	if err != nil {
		return err
	}
	if body == nil {
		// The server needs apiVersion and kind in the body.
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		if body, err = json.Marshal(obj); err != nil {
			return fmt.Errorf("client: encoding %T: %w", obj, err)
		}
	}
	u.RawQuery = q.Encode()
	ctx = withSpanSink(ctx)
	out, err := c.do(ctx, method, u, acceptFor(obj, false), contentType, body, m)
	if err != nil {
		return err
	}
	if err := decodeInto(out, obj, gvk); err != nil {
		return err
	}
	if q.Get("dryRun") == "" {
		c.wrote(ctx, gvk, m, obj, sub, q.Get("fieldManager"))
	}
	return nil
}

func (c *Client) writeQuery(opts []WriteOption) (WriteOptions, url.Values) {
	o := WriteOptions{FieldManager: c.fieldOwner}
	for _, opt := range opts {
		opt(&o)
	}
	q := url.Values{}
	if o.DryRun {
		q.Set("dryRun", metav1.DryRunAll)
	}
	if o.FieldManager != "" {
		q.Set("fieldManager", o.FieldManager)
	}
	return o, q
}

// wholeObject refuses a write that sends obj whole (Create, Update, Status
// update) when obj is metadata-only: the server would store an object
// without its spec, data or status.
func wholeObject(obj Object, verb string) error {
	if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return apierrors.NewBadRequest(fmt.Sprintf("client: cannot %s a metadata-only object (*metav1.PartialObjectMetadata): the server would drop everything but its metadata; use Patch", verb))
	}
	return nil
}

// Create creates obj on the server and fills it with the server's answer.
// A name taken is an error for which apierrors.IsAlreadyExists is true.
// obj cannot be metadata-only.
func (c *Client) Create(ctx context.Context, obj Object, opts ...WriteOption) error {
	if err := wholeObject(obj, "create"); err != nil {
		return err
	}
	_, q := c.writeQuery(opts)
	return c.write(ctx, http.MethodPost, obj, "", true, "application/json", nil, q)
}

// Update replaces obj on the server (optimistic concurrency on its
// resourceVersion: a stale one is a Conflict) and fills it with the answer.
// obj cannot be metadata-only: Patch a metadata-only object instead.
func (c *Client) Update(ctx context.Context, obj Object, opts ...WriteOption) error {
	if err := wholeObject(obj, "update"); err != nil {
		return err
	}
	_, q := c.writeQuery(opts)
	return c.write(ctx, http.MethodPut, obj, "", false, "application/json", nil, q)
}

// Patch sends patch for obj and fills obj with the answer.
func (c *Client) Patch(ctx context.Context, obj Object, patch Patch, opts ...WriteOption) error {
	return c.patch(ctx, obj, "", patch, opts)
}

func (c *Client) patch(ctx context.Context, obj Object, sub string, patch Patch, opts []WriteOption) error {
	if patch == nil {
		return errors.New("client: nil Patch")
	}
	if isNil(obj) { // before patch.Data sees it
		return fmt.Errorf("client: nil object (%T)", obj)
	}
	o, q := c.writeQuery(opts)
	if o.Force {
		q.Set("force", "true")
	}
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	if len(data) == 0 { // write would send obj itself
		return apierrors.NewBadRequest(fmt.Sprintf("client: empty %s patch", patch.Type()))
	}
	return c.write(ctx, http.MethodPatch, obj, sub, false, string(patch.Type()), data, q)
}

// Delete deletes obj on the server. A missing object is an error for which
// apierrors.IsNotFound is true (see IgnoreNotFound). An object with
// finalizers stays, with a deletionTimestamp, until they are removed.
func (c *Client) Delete(ctx context.Context, obj Object, opts ...WriteOption) error {
	o, q := c.writeQuery(opts)
	q.Del("fieldManager")
	_, m, u, err := c.target(ctx, obj, "", false)
	if err != nil {
		return err
	}
	u.RawQuery = q.Encode()
	body, err := json.Marshal(deleteOptions(o))
	if err != nil {
		return fmt.Errorf("client: encoding DeleteOptions: %w", err)
	}
	ctx = withSpanSink(ctx)
	out, err := c.do(ctx, http.MethodDelete, u, "application/json", "application/json", body, m)
	if err != nil {
		return err
	}
	if !o.DryRun {
		gvk, _ := c.gvkFor(obj) // target found it
		c.deleted(ctx, gvk, m, obj, out)
	}
	return nil
}

// Status returns a writer of the status subresource: with it enabled, a
// write to the object ignores status changes and a write to /status
// ignores everything else.
// It is a *StatusWriter.
func (c *Client) Status() SubResourceWriter { return &StatusWriter{c: c} }

// StatusWriter writes the status subresource: a [SubResourceWriter].
type StatusWriter struct{ c *Client }

// Update replaces obj's status on the server and fills obj with the answer.
// obj cannot be metadata-only.
func (s *StatusWriter) Update(ctx context.Context, obj Object, opts ...WriteOption) error {
	if err := wholeObject(obj, "update the status of"); err != nil {
		return err
	}
	_, q := s.c.writeQuery(opts)
	return s.c.write(ctx, http.MethodPut, obj, "status", false, "application/json", nil, q)
}

// Patch patches obj's status on the server and fills obj with the answer.
func (s *StatusWriter) Patch(ctx context.Context, obj Object, patch Patch, opts ...WriteOption) error {
	return s.c.patch(ctx, obj, "status", patch, opts)
}
