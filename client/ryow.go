package client

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/rctx"
	irest "kloop.dev/kloop/internal/rest"
)

// DefaultReadYourOwnWritesTimeout is the default of
// Options.ReadYourOwnWritesTimeout.
const DefaultReadYourOwnWritesTimeout = 3 * time.Second

// MetricsProvider receives a client's read-your-own-writes statistics
// (kloop.dev/kloop/metrics' Client counts them for Prometheus). It is called
// only on the slow path — once per cached read that had to wait for the
// cache — never per read, so it takes plain values and the metrics package
// needs none of the client's types.
type MetricsProvider interface {
	// ReadWaited reports a cached read that waited d for the cache to catch
	// up with the client's own writes; stale reports that it waited the
	// whole ReadYourOwnWritesTimeout and went on with a cache still behind.
	// It may be called from any goroutine.
	ReadWaited(d time.Duration, stale bool)
}

// writeLog is what a client remembers of its own writes to cached kinds,
// for the reads that follow them (read-your-own-writes): each object's last
// write, and per kind the highest resourceVersion written, in all and by
// namespace, until the write is older than the timeout (then a read no
// longer waits for it).
type writeLog struct {
	timeout time.Duration
	now     func() time.Time

	mu    sync.RWMutex // guards kinds and what they hold
	kinds map[schema.GroupKind]*kindLog
}

// kindLog is the writes of one kind.
type kindLog struct {
	objs map[ObjectKey]*objWrite
	// order holds the writes of objs and older ones by deadline (the
	// timeout is fixed: in the order they were made), for pruning.
	order []*objWrite
	// all and byNS are the highest resourceVersion written (not deleted),
	// in every namespace and in each.
	all  mark
	byNS map[string]mark
	// deletes counts the deletions among objs.
	deletes int
}

// objWrite is the last write of one object.
type objWrite struct {
	key      ObjectKey
	rv       string // after the write; "" for a deletion
	uid      types.UID
	deleted  bool
	labels   map[string]string
	deadline time.Time
	reported atomic.Bool // a read gave up on it (logged once)
}

// mark is a highest resourceVersion written and when reads stop waiting
// for it.
type mark struct {
	rv       string
	deadline time.Time
}

func newWriteLog(timeout time.Duration) *writeLog {
	return &writeLog{timeout: timeout, now: time.Now, kinds: map[schema.GroupKind]*kindLog{}}
}

// record remembers a write of obj (its state after the write); deleted:
// the write deleted it.
func (l *writeLog) record(gk schema.GroupKind, key ObjectKey, rv string, uid types.UID, objLabels map[string]string, deleted bool) {
	if !deleted {
		if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
			return // cannot tell when the cache has it
		}
	}
	now := l.now()
	w := &objWrite{key: key, rv: rv, uid: uid, deleted: deleted, labels: objLabels, deadline: now.Add(l.timeout)}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.kinds[gk]
	if k == nil {
		k = &kindLog{objs: map[ObjectKey]*objWrite{}, byNS: map[string]mark{}}
		l.kinds[gk] = k
	}
	k.prune(now)
	if old := k.objs[key]; old != nil && old.deleted {
		k.deletes--
	}
	k.objs[key] = w
	k.order = append(k.order, w)
	if deleted {
		k.deletes++
		return
	}
	k.all = k.all.raise(rv, w.deadline, now)
	k.byNS[key.Namespace] = k.byNS[key.Namespace].raise(rv, w.deadline, now)
}

// raise returns m raised to rv (if higher, or if m expired) with deadline.
func (m mark) raise(rv string, deadline, now time.Time) mark {
	if m.rv == "" || now.After(m.deadline) {
		return mark{rv, deadline}
	}
	if c, err := resourceversion.CompareResourceVersion(rv, m.rv); err == nil && c > 0 {
		m.rv = rv
	}
	m.deadline = deadline
	return m
}

// prune forgets the writes past their deadline.
func (k *kindLog) prune(now time.Time) {
	n := 0
	for n < len(k.order) && now.After(k.order[n].deadline) {
		w := k.order[n]
		if k.objs[w.key] == w {
			delete(k.objs, w.key)
			if w.deleted {
				k.deletes--
			}
		}
		n++
	}
	if n > 0 {
		clear(k.order[:n])
		k.order = k.order[n:]
		if len(k.order) == 0 {
			k.order = nil
			clear(k.byNS)
			k.all = mark{}
		}
	}
}

// pendingGet returns the last write of key if a Get through inf must wait
// for it: not past its deadline, and of an object inf can hold.
func (l *writeLog) pendingGet(gk schema.GroupKind, key ObjectKey, inf *informer.Informer[informer.Object]) *objWrite {
	l.mu.RLock()
	k := l.kinds[gk]
	var w *objWrite
	if k != nil {
		w = k.objs[key]
	}
	l.mu.RUnlock()
	if w == nil || l.now().After(w.deadline) || !holds(inf, w) {
		return nil
	}
	return w
}

// holds reports whether inf's selectors let w's object in: an object a
// selector excludes never reaches the cache, and a field selector cannot
// be checked (its fields are not kept): its writes are not waited for.
func holds(inf *informer.Informer[informer.Object], w *objWrite) bool {
	ls, fs := inf.Selectors()
	if fs != nil {
		return false
	}
	return ls == nil || ls.Matches(labels.Set(w.labels))
}

// pendingList returns what a List of namespace ns ("": all) through inf
// must wait for: the highest resourceVersion written (a zero mark when
// none, or when inf has selectors: then the matching writes are in objs)
// and the writes to check one by one (deletions, and with selectors every
// write the selectors hold).
func (l *writeLog) pendingList(gk schema.GroupKind, ns string, inf *informer.Informer[informer.Object]) (mark, []*objWrite) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	k := l.kinds[gk]
	if k == nil {
		return mark{}, nil
	}
	now := l.now()
	ls, fs := inf.Selectors()
	selected := ls != nil || fs != nil
	var m mark
	if !selected {
		if ns == "" {
			m = k.all
		} else {
			m = k.byNS[ns]
		}
		if now.After(m.deadline) {
			m = mark{}
		}
		if k.deletes == 0 {
			return m, nil
		}
	}
	var objs []*objWrite
	for _, w := range k.objs {
		if (w.deleted || selected) && (ns == "" || w.key.Namespace == ns) && !now.After(w.deadline) && holds(inf, w) {
			objs = append(objs, w)
		}
	}
	return m, objs
}

// caughtUp reports whether inf has caught up with w: a deletion once the
// object is gone (or replaced by one of another UID), a write once the
// cache holds the object at w's resourceVersion or later, or its
// StoreResourceVersion reached it. A resourceVersion that does not compare
// tells nothing: caught up.
func caughtUp(inf *informer.Informer[informer.Object], w *objWrite) bool {
	cur, ok := inf.Get(w.key.Namespace, w.key.Name)
	if w.deleted {
		return !ok || w.uid != "" && cur.GetUID() != w.uid
	}
	if ok {
		if c, err := resourceversion.CompareResourceVersion(cur.GetResourceVersion(), w.rv); err == nil && c >= 0 {
			return true
		}
	}
	return reached(inf, w.rv)
}

// reached reports whether inf's StoreResourceVersion is rv or later: false
// while the cache has applied nothing (an empty initial list carries no
// resourceVersion to the cache: the first event or bookmark will, such as
// the one of the write waited for), true when they do not compare.
func reached(inf *informer.Informer[informer.Object], rv string) bool {
	store := inf.StoreResourceVersion()
	if store == "" {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(store, rv)
	return err != nil || c >= 0
}

// awaitGet waits until inf has caught up with the client's last write of
// key, if any.
func (c *Client) awaitGet(ctx context.Context, gvk schema.GroupVersionKind, key ObjectKey, inf *informer.Informer[informer.Object]) error {
	if c.writes == nil {
		return nil
	}
	w := c.writes.pendingGet(gvk.GroupKind(), key, inf)
	if w == nil || noReadWait(ctx) {
		return nil
	}
	return c.await(ctx, inf, w.deadline, func() bool { return caughtUp(inf, w) }, func() {
		if !w.reported.Swap(true) {
			c.logStale(gvk, key, w)
		}
	})
}

// awaitList waits until inf, read for a List of namespace ns, has caught
// up with the client's writes of the kind there.
func (c *Client) awaitList(ctx context.Context, gvk schema.GroupVersionKind, ns string, inf *informer.Informer[informer.Object]) error {
	if c.writes == nil {
		return nil
	}
	m, objs := c.writes.pendingList(gvk.GroupKind(), ns, inf)
	if m.rv == "" && len(objs) == 0 || noReadWait(ctx) {
		return nil
	}
	deadline := m.deadline
	for _, w := range objs {
		if w.deadline.After(deadline) {
			deadline = w.deadline
		}
	}
	return c.await(ctx, inf, deadline, func() bool {
		if m.rv != "" && !reached(inf, m.rv) {
			return false
		}
		for len(objs) > 0 && caughtUp(inf, objs[0]) {
			objs = objs[1:]
		}
		return len(objs) == 0
	}, func() {
		for _, w := range objs {
			if !w.reported.Swap(true) {
				c.logStale(gvk, w.key, w)
			}
		}
		if len(objs) == 0 {
			c.logger.Warn("client: the cache did not catch up with this client's writes in time: listing it as it is",
				"kind", gvk.Kind, "namespace", ns, "resourceVersion", m.rv, "cacheResourceVersion", inf.StoreResourceVersion(),
				"timeout", c.writes.timeout)
		}
	})
}

// wantsManagedFields reports whether ctx is a reconcile's whose writes must
// carry their managedFields (rctx.Writes.KeepManagedFields).
func wantsManagedFields(ctx context.Context) bool {
	sc := rctx.From(ctx)
	return sc != nil && sc.Writes != nil && sc.Writes.KeepManagedFields
}

// noReadWait reports whether ctx is a reconcile's whose controller opted
// out of read-your-own-writes.
func noReadWait(ctx context.Context) bool {
	sc := rctx.From(ctx)
	return sc != nil && sc.NoReadWait
}

func (c *Client) logStale(gvk schema.GroupVersionKind, key ObjectKey, w *objWrite) {
	what := "write"
	if w.deleted {
		what = "deletion"
	}
	c.logger.Warn("client: the cache did not catch up with this client's "+what+" in time: reading it as it is",
		"kind", gvk.Kind, "namespace", key.Namespace, "name", key.Name, "resourceVersion", w.rv,
		"timeout", c.writes.timeout)
}

// await waits until done reports true — checked now and after each change
// of inf's cache — or deadline passes (then onStale is called, the read is
// counted stale and goes on: never an error), or ctx ends (its error).
func (c *Client) await(ctx context.Context, inf *informer.Informer[informer.Object], deadline time.Time, done func() bool, onStale func()) error {
	if done() {
		return nil
	}
	start := c.writes.now()
	stale := false
	if c.metrics != nil {
		defer func() { c.metrics.ReadWaited(c.writes.now().Sub(start), stale) }()
	}
	timer := time.NewTimer(deadline.Sub(start))
	defer timer.Stop()
	for {
		changed := inf.Changed()
		if done() {
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			if done() {
				return nil
			}
			stale = true
			onStale()
			return nil
		case <-ctx.Done():
			return fmt.Errorf("client: waiting for the cache to catch up with this client's writes: %w", context.Cause(ctx))
		}
	}
}

// withSpanSink returns ctx with a sink for the span of the write about to
// be sent, when the reconcile of ctx is traced (rctx.Scope.Traced):
// recordWrite hands it to the reconcile's writes (rctx.Write.Span), for its
// controller to link the reconciles the write triggers to it. Else it
// returns ctx.
func withSpanSink(ctx context.Context) context.Context {
	if sc := rctx.From(ctx); sc == nil || !sc.Traced || sc.Writes == nil {
		return ctx
	}
	return irest.WithSpanSink(ctx, new(trace.SpanContext))
}

// wrote records a successful write of obj (its state in the server's
// answer) of kind gvk: in the client's write log when the kind is cached,
// and in the writes of the reconcile of ctx, if any. sub is the
// subresource; manager the field manager.
func (c *Client) wrote(ctx context.Context, gvk schema.GroupVersionKind, m *meta.RESTMapping, obj metav1.Object, sub, manager string) {
	c.recordWrite(ctx, gvk, m, rctx.Write{
		Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(),
		ResourceVersion: obj.GetResourceVersion(), Generation: obj.GetGeneration(),
		Subresource: sub, FieldManager: manager,
	}, obj.GetLabels(), obj)
}

// recordWrite records w (its Kind set here) and, for the reconcile's
// writes, obj's managedFields when asked.
func (c *Client) recordWrite(ctx context.Context, gvk schema.GroupVersionKind, m *meta.RESTMapping, w rctx.Write, objLabels map[string]string, obj metav1.Object) {
	w.Kind = gvk.GroupKind()
	if m != nil && m.Scope.Name() != meta.RESTScopeNameNamespace {
		w.Namespace = ""
	}
	key := ObjectKey{Namespace: w.Namespace, Name: w.Name}
	cached := c.cached(gvk)
	if cached && c.writes != nil {
		c.writes.record(w.Kind, key, w.ResourceVersion, w.UID, objLabels, w.Deleted)
	}
	sc := rctx.From(ctx)
	if sc == nil || sc.Writes == nil {
		return
	}
	if span := irest.SpanSinkFrom(ctx); span != nil {
		w.Span = *span
		if sc.OnTracedWrite != nil && span.IsValid() && !w.Deleted && w.ResourceVersion != "" {
			sc.OnTracedWrite(w.Namespace, w.Name, w.ResourceVersion, w.Span)
		}
	}
	if sc.Writes.KeepManagedFields && obj != nil {
		w.ManagedFields = slices.Clone(obj.GetManagedFields())
	}
	if cached {
		scope := readScope(ctx, gvk)
		ow := &objWrite{key: key, rv: w.ResourceVersion, uid: w.UID, deleted: w.Deleted, labels: objLabels}
		w.CaughtUp = func() bool { return c.writeCaughtUp(gvk, scope, ow) }
	}
	sc.Writes.Add(w)
}

// writeCaughtUp reports whether the client's synced informer of gvk within
// scope has caught up with w (true when there is none, or it cannot tell).
func (c *Client) writeCaughtUp(gvk schema.GroupVersionKind, scope informer.Scope, w *objWrite) bool {
	if nss := c.factory.Namespaces(gvk.GroupKind()); nss != nil && scope.Namespace == "" {
		scope.Namespace = w.key.Namespace
	}
	var inf *informer.Informer[informer.Object]
	c.synced.Range(func(k, v any) bool {
		if ik := k.(informerKey); ik.gvk.GroupKind() == gvk.GroupKind() && ik.scope == scope {
			inf = v.(*informer.Informer[informer.Object])
			return false
		}
		return true
	})
	if inf == nil || informer.IsDropped(inf) || !holds(inf, w) {
		return true
	}
	return caughtUp(inf, w)
}

// deleted records a successful Delete of obj (key) whose answer was body: a
// Status when the object is gone, the object itself when it stays (with
// finalizers, or a grace period).
func (c *Client) deleted(ctx context.Context, gvk schema.GroupVersionKind, m *meta.RESTMapping, obj Object, body []byte) {
	var ans struct {
		Kind     string `json:"kind"`
		Metadata struct {
			UID               types.UID         `json:"uid"`
			ResourceVersion   string            `json:"resourceVersion"`
			Generation        int64             `json:"generation"`
			Labels            map[string]string `json:"labels"`
			Finalizers        []string          `json:"finalizers"`
			DeletionTimestamp *metav1.Time      `json:"deletionTimestamp"`
		} `json:"metadata"`
		Details struct {
			UID types.UID `json:"uid"`
		} `json:"details"`
	}
	_ = json.Unmarshal(body, &ans) // an answer that does not decode is a deletion
	w := rctx.Write{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	md := ans.Metadata
	if ans.Kind != "Status" && md.ResourceVersion != "" && (len(md.Finalizers) > 0 || md.DeletionTimestamp != nil) {
		// Still there, marked for deletion: a write like any other.
		w.UID, w.ResourceVersion, w.Generation = md.UID, md.ResourceVersion, md.Generation
		c.recordWrite(ctx, gvk, m, w, md.Labels, nil)
		return
	}
	w.Deleted = true
	w.UID = ans.Details.UID
	if w.UID == "" {
		w.UID = md.UID
	}
	if w.UID == "" {
		w.UID = obj.GetUID()
	}
	c.recordWrite(ctx, gvk, m, w, md.Labels, nil)
}

// appliedMeta returns the metadata of an apply's answer, decoded into
// config.
func appliedMeta(config ApplyConfiguration) metav1.Object {
	if ua, ok := config.(unstructuredApply); ok {
		return ua.u
	}
	// A typed apply configuration: its ObjectMetaApplyConfiguration's
	// fields, read by reflection (they are pointers).
	v := reflect.ValueOf(config)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	md := v.FieldByName("ObjectMetaApplyConfiguration")
	for md.Kind() == reflect.Pointer {
		if md.IsNil() {
			return nil
		}
		md = md.Elem()
	}
	if !md.IsValid() || md.Kind() != reflect.Struct {
		return nil
	}
	o := &metav1.ObjectMeta{}
	str := func(name string) string {
		f := md.FieldByName(name)
		if f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String {
			return f.Elem().String()
		}
		return ""
	}
	o.Name, o.Namespace, o.ResourceVersion = str("Name"), str("Namespace"), str("ResourceVersion")
	o.UID = types.UID(str("UID"))
	if f := md.FieldByName("Generation"); f.Kind() == reflect.Pointer && !f.IsNil() {
		o.Generation = f.Elem().Int()
	}
	if f := md.FieldByName("Labels"); f.Kind() == reflect.Map {
		o.Labels, _ = f.Interface().(map[string]string)
	}
	return o
}
