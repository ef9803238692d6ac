package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"

	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	irest "kloop.dev/kloop/internal/rest"
)

// RESTOptions configures a RESTListerWatcher. The zero value works.
type RESTOptions[T Object] struct {
	// LabelSelector restricts lists and watches to matching objects, in
	// the Kubernetes selector syntax ("app=web,tier!=db"). Default: all.
	LabelSelector string
	// FieldSelector restricts lists and watches by fields
	// ("spec.nodeName=n1"). Default: all.
	FieldSelector string
	// New allocates an empty object to decode into. Default: a new zero
	// value of the struct T points to (T must then be a pointer to a
	// struct, as *corev1.Pod or *unstructured.Unstructured are).
	New func() T
	// DropManagedFields: objects come without metadata.managedFields,
	// which typed objects then skip while decoding (checked as JSON, not
	// decoded: about a tenth of a realistic Pod's decoding and a sixth of
	// its allocated bytes) — for a consumer that would drop them anyway,
	// as an informer does by default (the informer factory sets it then).
	// Default false: objects come as the server sends them.
	DropManagedFields bool
	// Protobuf asks for lists and watches in protobuf, then JSON
	// (Accept: application/vnd.kubernetes.protobuf,application/json), as
	// kube-controller-manager's clients do: objects of k8s.io/api and
	// metav1.PartialObjectMetadata, which have generated protobuf code,
	// decode a few times faster than from JSON and allocate less. Objects
	// without it (unstructured ones, custom resource types) are asked for
	// in JSON; an answer in JSON (the server has no protobuf form of
	// custom resources) is read as JSON. Default false, unless the
	// rest.Config asks for protobuf answers (its AcceptContentTypes, or
	// its ContentType when AcceptContentTypes is empty, starts with
	// application/vnd.kubernetes.protobuf), as client-go's clients do.
	Protobuf bool
	// HTTPClient sends the requests. Default: rest.HTTPClientFor(cfg), i.e.
	// client-go's transport with the config's TLS and authentication. Its
	// Timeout (rest.Config.Timeout) applies to lists, not to watches, which
	// end by the timeoutSeconds the reflector asks for. The client-side rate
	// limit comes from the rest.Config, not from HTTPClient (see
	// NewRESTListerWatcher).
	HTTPClient *http.Client
}

// RESTListerWatcher lists and watches one resource over the Kubernetes REST
// API, decoding JSON, or protobuf (RESTOptions.Protobuf). It is safe for
// concurrent use.
type RESTListerWatcher[T Object] struct {
	client *http.Client
	// watchClient is client without its overall Timeout (rest.Config's
	// Timeout), which would cut every watch: a watch ends by its
	// timeoutSeconds instead.
	watchClient *http.Client
	url         url.URL // the collection: scheme, host, path; no query
	userAgent   string
	gr          schema.GroupResource
	gv          schema.GroupVersion // to fill apiVersion of list items
	label       string
	field       string
	newObj      func() T
	// unstructured: T is *unstructured.Unstructured; list items lacking
	// kind and apiVersion get them from the list.
	unstructured bool
	dropMF       bool // RESTOptions.DropManagedFields
	// accept is the Accept header of lists and of watches.
	acceptList, acceptWatch string
	// protobuf: lists and watches are asked for in protobuf first
	// (RESTOptions.Protobuf, for objects that decode from it).
	protobuf bool
	// limiter is waited on before each request (each list page, each
	// watch): cfg's client-side rate limit (irest.RateLimiter); nil: none.
	limiter flowcontrol.RateLimiter
}

// NewRESTListerWatcher returns a ListerWatcher for resource (for example
// corev1.SchemeGroupVersion.WithResource("pods")) in namespace ("" for all
// namespaces, or for a cluster-scoped resource), talking to the server of
// cfg.
//
// With T = *metav1.PartialObjectMetadata it asks the server for metadata
// only (as client-go's metadata client does).
//
// Each request — every page of a list, every watch — first waits for the
// client-side rate limit of cfg, as client-go's REST client does:
// cfg.RateLimiter if set (share one to share a budget between listers),
// else a token bucket of cfg.QPS with cfg.Burst (default 10) when QPS > 0,
// owned by this lister. QPS 0 or negative: no limit (controller-runtime's
// convention; client-go's would be 5 qps). A context cancelled while
// waiting ends the request with an error wrapping the context's.
func NewRESTListerWatcher[T Object](cfg *rest.Config, resource schema.GroupVersionResource, namespace string, opts RESTOptions[T]) (*RESTListerWatcher[T], error) {
	if cfg == nil {
		return nil, errors.New("reflector: nil rest.Config")
	}
	if resource.Resource == "" || resource.Version == "" ||
		len(pathvalidation.IsValidPathSegmentName(resource.Resource)) > 0 ||
		len(pathvalidation.IsValidPathSegmentName(resource.Version)) > 0 ||
		(resource.Group != "" && len(pathvalidation.IsValidPathSegmentName(resource.Group)) > 0) {
		return nil, fmt.Errorf("reflector: invalid resource %q", resource.String())
	}
	if namespace != "" {
		if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
			return nil, fmt.Errorf("reflector: invalid namespace %q: %s", namespace, strings.Join(errs, "; "))
		}
	}
	if _, err := labels.Parse(opts.LabelSelector); err != nil {
		return nil, fmt.Errorf("reflector: invalid label selector: %w", err)
	}
	if _, err := fields.ParseSelector(opts.FieldSelector); err != nil {
		return nil, fmt.Errorf("reflector: invalid field selector: %w", err)
	}
	newObj := opts.New
	if newObj == nil {
		var zero T
		t := reflect.TypeOf(zero)
		if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("reflector: RESTOptions.New is required for %v", t)
		}
		elem := t.Elem()
		newObj = func() T { return reflect.New(elem).Interface().(T) }
	}
	client := opts.HTTPClient
	if client == nil {
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("reflector: HTTP client for config: %w", err)
		}
		client = c
	}
	apiPath := "/apis"
	if resource.Group == "" {
		apiPath = "/api"
	}
	gv := resource.GroupVersion()
	base, err := irest.BaseURL(cfg)
	if err != nil {
		return nil, fmt.Errorf("reflector: server URL: %w", err)
	}
	p := path.Join(base.Path, rest.DefaultVersionedAPIPath(apiPath, gv))
	if namespace != "" {
		p = path.Join(p, "namespaces", namespace)
	}
	p = path.Join(p, resource.Resource)
	watchClient := client
	if client.Timeout > 0 {
		c := *client
		c.Timeout = 0
		watchClient = &c
	}
	lw := &RESTListerWatcher[T]{
		client:      client,
		watchClient: watchClient,
		url:         url.URL{Scheme: base.Scheme, Host: base.Host, Path: p},
		userAgent:   irest.UserAgent(cfg),
		gr:          resource.GroupResource(),
		gv:          gv,
		label:       opts.LabelSelector,
		field:       opts.FieldSelector,
		newObj:      newObj,
		dropMF:      opts.DropManagedFields,
		acceptList:  "application/json",
		acceptWatch: "application/json",
		limiter:     irest.RateLimiter(cfg),
	}
	lw.protobuf = (opts.Protobuf || configAsksProtobuf(cfg)) && protobufCapable(newObj)
	switch any(newObj()).(type) {
	case *unstructured.Unstructured:
		lw.unstructured, lw.protobuf = true, false
	case *metav1.PartialObjectMetadata:
		lw.acceptList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
		lw.acceptWatch = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
		if lw.protobuf {
			// client-go's metadata client's
			lw.acceptList = irest.ContentTypeProtobuf + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + lw.acceptList
			lw.acceptWatch = irest.ContentTypeProtobuf + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1," + lw.acceptWatch
		}
	default:
		if lw.protobuf {
			lw.acceptList = irest.ContentTypeProtobuf + ",application/json"
			lw.acceptWatch = lw.acceptList
		}
	}
	return lw, nil
}

// query renders the options as a query string, with the selectors.
func (l *RESTListerWatcher[T]) query(opts metav1.ListOptions, watch bool) string {
	q := url.Values{}
	if watch {
		q.Set("watch", "true")
	}
	if l.label != "" {
		q.Set("labelSelector", l.label)
	}
	if l.field != "" {
		q.Set("fieldSelector", l.field)
	}
	if opts.ResourceVersion != "" {
		// An empty resourceVersion ("most recent") is the same as absent.
		q.Set("resourceVersion", opts.ResourceVersion)
	}
	if opts.ResourceVersionMatch != "" {
		q.Set("resourceVersionMatch", string(opts.ResourceVersionMatch))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.FormatInt(opts.Limit, 10))
	}
	if opts.Continue != "" {
		q.Set("continue", opts.Continue)
	}
	if opts.AllowWatchBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	if opts.SendInitialEvents != nil {
		q.Set("sendInitialEvents", strconv.FormatBool(*opts.SendInitialEvents))
	}
	if opts.TimeoutSeconds != nil {
		q.Set("timeoutSeconds", strconv.FormatInt(*opts.TimeoutSeconds, 10))
	}
	return q.Encode()
}

func (l *RESTListerWatcher[T]) do(ctx context.Context, verb string, opts metav1.ListOptions, watch bool) (*http.Response, error) {
	if err := irest.Throttle(ctx, l.limiter); err != nil {
		return nil, fmt.Errorf("%s %s: %w", verb, l.gr, err)
	}
	u := l.url
	u.RawQuery = l.query(opts, watch)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", verb, l.gr, err)
	}
	if watch {
		req.Header.Set("Accept", l.acceptWatch)
	} else {
		req.Header.Set("Accept", l.acceptList)
	}
	req.Header.Set("User-Agent", l.userAgent)
	client := l.client
	if watch {
		client = l.watchClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", verb, l.gr, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		// The reflector's backoff retries: its wait honours the
		// Retry-After that the error carries (retryAfter).
		return nil, irest.ResponseError(resp, verb, l.gr)
	}
	return resp, nil
}

// List lists one page.
func (l *RESTListerWatcher[T]) List(ctx context.Context, opts metav1.ListOptions) (*List[T], error) {
	resp, err := l.do(ctx, "list", opts, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list *List[T]
	if l.protobuf && irest.IsProtobuf(resp.Header.Get("Content-Type")) {
		list, err = decodeProtobufList(resp.Body, l.newObj, l.dropMF)
	} else {
		list, err = decodeListDropping(resp.Body, l.newObj, l.unstructured, l.gv, l.dropMF)
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.gr, err)
	}
	return list, nil
}

// Watch opens a watch.
func (l *RESTListerWatcher[T]) Watch(ctx context.Context, opts metav1.ListOptions) (Watch[T], error) {
	resp, err := l.do(ctx, "watch", opts, true)
	if err != nil {
		return nil, err
	}
	if l.protobuf && irest.IsProtobuf(resp.Header.Get("Content-Type")) {
		return &restWatch[T]{body: resp.Body, dec: newProtobufWatch(resp.Body, l.newObj, l.dropMF), gr: l.gr}, nil
	}
	dec := newEventDecoder(resp.Body, l.newObj, l.unstructured)
	dec.dropMF = l.dropMF
	return &restWatch[T]{body: resp.Body, dec: dec, gr: l.gr}, nil
}

// restWatch is a watch over an HTTP response body.
type restWatch[T Object] struct {
	body io.ReadCloser
	dec  interface{ next() (Event[T], error) }
	gr   schema.GroupResource
	once sync.Once // closes body
}

func (w *restWatch[T]) Next() (Event[T], error) {
	ev, err := w.dec.next()
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("watch %s: %w", w.gr, err)
	}
	return ev, err
}

func (w *restWatch[T]) Stop() { w.once.Do(func() { w.body.Close() }) }

// configAsksProtobuf reports whether cfg asks for answers in protobuf
// first, as client-go's REST client reads it: its AcceptContentTypes, or
// its ContentType when that is empty.
func configAsksProtobuf(cfg *rest.Config) bool {
	accept := cfg.AcceptContentTypes
	if accept == "" {
		accept = cfg.ContentType
	}
	first, _, _ := strings.Cut(accept, ",")
	return irest.IsProtobuf(strings.TrimSpace(first))
}
