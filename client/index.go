package client

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/informer"
)

// indexKey is a kind in one form (the Go type of its objects: a typed
// struct, *unstructured.Unstructured or *metav1.PartialObjectMetadata): the
// informers a field index applies to.
type indexKey struct {
	gvk schema.GroupVersionKind
	t   reflect.Type
}

// fieldIndexes are the field indexes of a Client and the informers that
// have them. Reads check them without a lock; IndexField and the first read
// of an informer that lacks some take mu.
type fieldIndexes struct {
	mu sync.Mutex // serializes the writers of byKind and of the informers' indexes
	// byKind holds the indexes of each kind and form by index name
	// ("field:<field>"): an immutable map, replaced whole (under mu) when
	// an index is added; nil when there is none.
	byKind atomic.Pointer[map[indexKey]map[string]cache.IndexFunc[informer.Object]]
	// applied maps each informer of an indexed kind to how many of its
	// kind's indexes it has: fewer than len(byKind[key]) means some are
	// still to be added. Written under mu.
	applied sync.Map // *informer.Informer[informer.Object] → int
}

// IndexField indexes the cached objects of obj's kind and form by field,
// as controller-runtime's FieldIndexer.IndexField does: extract returns the
// values of the field of an object (none, one or several; it must be a
// pure function of the object and must not modify it). A cached List of
// that kind with MatchingFields{field: value} (or a field selector
// field=value) then returns the objects with that value, from the index.
//
// The field is a name of your choosing, usually the path of the field
// ("spec.nodeName"); metadata.name and metadata.namespace are built in.
// The index applies to every informer the Client reads the kind from, the
// scoped ones of builder.WithScope included, whether it is started already
// or not. Indexing a field twice is an error; so is a kind the Client does
// not cache.
func (c *Client) IndexField(obj Object, field string, extract func(Object) []string) error {
	if c.factory == nil {
		return errors.New("client: IndexField needs cached reads (Options.Factory)")
	}
	if extract == nil {
		return fmt.Errorf("client: IndexField %q needs an extract function", field)
	}
	if strings.TrimSpace(field) == "" {
		return errors.New("client: IndexField needs a field name")
	}
	if field == "metadata.name" || field == "metadata.namespace" {
		return fmt.Errorf("client: IndexField: %s is built in: cached Lists select on it without an index", field)
	}
	gvk, err := c.gvkFor(obj)
	if err != nil {
		return err
	}
	if !c.cached(gvk) {
		return fmt.Errorf("client: IndexField %q: %s is read from the API server (Options.Uncached), not cached", field, gvk.Kind)
	}
	key := indexKey{gvk, reflect.TypeOf(obj)}
	name := "field:" + field
	ix := &c.indexes
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var cur map[indexKey]map[string]cache.IndexFunc[informer.Object]
	if p := ix.byKind.Load(); p != nil {
		cur = *p
	}
	if _, dup := cur[key][name]; dup {
		return fmt.Errorf("client: IndexField: %s of %s is indexed already", field, gvk.Kind)
	}
	next := maps.Clone(cur)
	if next == nil {
		next = map[indexKey]map[string]cache.IndexFunc[informer.Object]{}
	}
	kind := maps.Clone(cur[key])
	if kind == nil {
		kind = map[string]cache.IndexFunc[informer.Object]{}
	}
	kind[name] = func(o informer.Object) ([]string, error) { return extract(o), nil }
	next[key] = kind
	ix.byKind.Store(&next)
	return nil
}

// index gives inf, an informer of obj's kind (gvk) and form, the field
// indexes it does not have yet.
func (c *Client) index(inf *informer.Informer[informer.Object], gvk schema.GroupVersionKind, obj Object) error {
	ix := &c.indexes
	p := ix.byKind.Load()
	if p == nil {
		return nil // no field index at all: the common case costs one load
	}
	key := indexKey{gvk, reflect.TypeOf(obj)}
	if len((*p)[key]) == 0 {
		return nil
	}
	if n, ok := ix.applied.Load(inf); ok && n.(int) == len((*p)[key]) {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	want := (*ix.byKind.Load())[key] // the latest, under mu
	missing := map[string]cache.IndexFunc[informer.Object]{}
	for name, fn := range want {
		if !inf.HasIndex(name) {
			missing[name] = fn
		}
	}
	if len(missing) > 0 {
		if err := inf.AddIndexers(missing); err != nil {
			return fmt.Errorf("client: adding the field indexes of %s: %w", gvk.Kind, err)
		}
	}
	ix.applied.Store(inf, len(want))
	return nil
}
