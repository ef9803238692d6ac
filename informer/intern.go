package informer

import (
	"hash/maphash"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxInterned is the longest string interned outside metadata: short
// strings (images, node names, env values, container names, ports' names,
// IPs of a node) repeat across objects; long ones (hashes, IDs, documents)
// rarely do.
const maxInterned = 64

// maxSharedMap is the most content (the bytes of its keys and values) of
// a map[string]string outside metadata that is shared by content: the
// tables of shared maps may keep a map alive after the objects that held
// it, so large ones are only interned entry by entry.
const maxSharedMap = 4096

// stringMapLarger reports whether m's keys and values hold more than limit
// bytes.
func stringMapLarger(m map[string]string, limit int) bool {
	n := 0
	for k, v := range m {
		if n += len(k) + len(v); n > limit {
			return true
		}
	}
	return false
}

// interner replaces the short strings of objects by canonical copies.
//
// Typed objects are walked by a plan compiled once per Go type: a tree of
// functions that read fields at fixed offsets (no reflect.Value on the hot
// path). When the informer caches a previous version of the object (an
// update, a relist), the walk runs over both at once: a string equal to the
// one at the same place in the previous version takes that (already
// canonical) copy, so only the strings that changed go through the
// canonical store. The previous version is only read.
type interner struct {
	// plans maps reflect.Type to *compiled; complete entries only.
	plans sync.Map
	// planMu serializes compilation (plans of recursive types are built as
	// a group and published together).
	planMu sync.Mutex

	// mu guards the string table (cur, prev, inserts, lastSize). The
	// informer's transform runs on its reflector's goroutine, so it is
	// uncontended; it is taken once per object.
	mu sync.Mutex
	// cur and prev hold the canonical copy of every string interned in
	// the current and the previous generation (key and value are the same
	// string). A string found in prev moves to cur. When a generation has
	// inserted as many strings as the table held at its start (at least
	// minGeneration), cur becomes prev and the old prev is dropped: a
	// string no object interned during a whole generation is released by
	// the table (objects still using it keep their copy), so the table
	// stays within a small multiple of the strings in use.
	cur, prev map[string]string
	inserts   int
	lastSize  int

	// seed hashes maps for the map tables; prepStrings is internStrings
	// (one method value for every call). Both set on first use.
	seed        maphash.Seed
	prepStrings func(map[string]string)
	// stringMaps and resources share equal labels, annotations and
	// resource lists between cached objects (see mapTable).
	stringMaps mapTable[string, string]
	resources  mapTable[corev1.ResourceName, resource.Quantity]
}

// minGeneration is the fewest strings a generation inserts before the
// table rotates.
const minGeneration = 4096

// intern returns the canonical copy of s; in.mu must be held.
func (in *interner) intern(s string) string {
	if s == "" {
		return ""
	}
	if c, ok := in.cur[s]; ok {
		return c
	}
	if c, ok := in.prev[s]; ok {
		in.cur[c] = c
		return c
	}
	if in.cur == nil {
		in.cur = make(map[string]string)
	}
	// A copy of its own: s may be part of a larger buffer.
	c := strings.Clone(s)
	in.cur[c] = c
	in.inserts++
	if in.inserts >= max(minGeneration, in.lastSize) {
		in.prev, in.cur = in.cur, make(map[string]string, len(in.cur))
		in.lastSize, in.inserts = len(in.prev), 0
	}
	return c
}

// walkFn interns the strings of the value at p, taking those equal to the
// value at old (same type; nil when there is no previous version), and
// reports whether the value at p is now equal to the one at old. A pointer,
// slice or map whose content equals the previous version's is replaced by
// the previous version's (structural sharing): an update that changes a
// Pod's status keeps the one copy of its unchanged spec lists, and the
// decoded copy becomes garbage at once. Equality is only reported when
// certain: unexported and opaque fields count as equal only when they hold
// the very same bytes (pointers), interfaces and ObjectMeta never.
//
// sameMemory: the walk never writes memory that the previous version
// reaches (a pointer, slice array or map it shares with the new object):
// that memory is cached, already interned, and read concurrently by
// handlers. Nor does it write a string that is already the canonical copy.
type walkFn func(p, old unsafe.Pointer) bool

// compiled boxes a type's walkFn so that recursive types can refer to
// their own plan before it is complete.
type compiled struct {
	fn walkFn
}

// sliceHeader is the memory layout of every Go slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

var (
	objectMetaType   = reflect.TypeFor[metav1.ObjectMeta]()
	typeMetaType     = reflect.TypeFor[metav1.TypeMeta]()
	stringMapType    = reflect.TypeFor[map[string]string]()
	resourceListType = reflect.TypeFor[corev1.ResourceList]()
)

func noop(unsafe.Pointer, unsafe.Pointer) bool { return false }

// internObject interns obj's metadata (namespace, generateName, labels,
// annotation keys and short values, finalizers, owner references) and, for
// typed and unstructured objects, every other string of at most
// maxInterned bytes (and every map key of an unstructured object). prev is
// the version of obj the cache holds, or nil; it is never modified.
func (in *interner) internObject(obj, prev Object) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.prepStrings == nil {
		in.seed = maphash.MakeSeed()
		in.prepStrings = in.internStrings
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		internMeta(obj, in.intern)
		in.internJSONMap(o.Object, false)
		return
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		internMeta(obj, in.intern)
		return
	}
	t := v.Type().Elem()
	var old unsafe.Pointer
	if prev != nil {
		if pv := reflect.ValueOf(prev); pv.Type() == v.Type() && !pv.IsNil() {
			old = pv.UnsafePointer()
		}
	}
	if old == v.UnsafePointer() {
		// The cached object itself, sent again (a relist by a source that
		// hands out the objects it was given): already interned, and
		// shared with readers, so it must not be written.
		return
	}
	in.compile(t).fn(v.UnsafePointer(), old)
}

// internMetadata interns obj's metadata only, taking what did not change
// from prev (the cached version, never modified): the cheap path of an
// update (see Options.InternUpdates).
func (in *interner) internMetadata(obj, prev Object) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.prepStrings == nil {
		in.seed = maphash.MakeSeed()
		in.prepStrings = in.internStrings
	}
	if m, ok := objectMeta(obj); ok {
		old, _ := objectMeta(prev)
		in.internObjectMeta(m, old)
		return
	}
	internMeta(obj, in.intern)
}

// objectMeta returns the ObjectMeta a typed object embeds.
func objectMeta(obj Object) (*metav1.ObjectMeta, bool) {
	a, ok := obj.(interface{ GetObjectMeta() metav1.Object })
	if !ok {
		return nil, false
	}
	m, ok := a.GetObjectMeta().(*metav1.ObjectMeta)
	return m, ok && m != nil
}

// compile returns the plan of type t.
func (in *interner) compile(t reflect.Type) *compiled {
	if c, ok := in.plans.Load(t); ok {
		return c.(*compiled)
	}
	in.planMu.Lock()
	defer in.planMu.Unlock()
	building := map[reflect.Type]*compiled{}
	c := in.build(t, building)
	for bt, bc := range building {
		in.plans.Store(bt, bc)
	}
	return c
}

// build returns the plan of t, from the published plans, the plans being
// built (a recursive type: its fn is filled in before anything runs), or
// built now.
func (in *interner) build(t reflect.Type, building map[reflect.Type]*compiled) *compiled {
	if c, ok := in.plans.Load(t); ok {
		return c.(*compiled)
	}
	if c, ok := building[t]; ok {
		return c
	}
	c := &compiled{fn: noop}
	building[t] = c
	c.fn = in.op(t, building)
	return c
}

// op builds the walkFn of type t.
func (in *interner) op(t reflect.Type, building map[reflect.Type]*compiled) walkFn {
	if !hasPointers(t) {
		// No string in it: nothing to intern, equal when its bytes are.
		// (Equal bytes are equal values; the converse may fail, for -0.0,
		// which only costs a missed sharing.)
		size := t.Size()
		return func(p, old unsafe.Pointer) bool { return old != nil && sameBytes(p, old, size) }
	}
	switch t.Kind() {
	case reflect.String:
		return func(p, old unsafe.Pointer) bool {
			s := (*string)(p)
			if old != nil {
				if o := *(*string)(old); o == *s {
					setString(s, o) // equal: the previous version's copy, whatever its length
					return true
				}
			}
			setString(s, in.canonical(*s, nil, maxInterned))
			return false
		}
	case reflect.Pointer:
		e := in.build(t.Elem(), building)
		return func(p, old unsafe.Pointer) bool {
			np := *(*unsafe.Pointer)(p)
			var op unsafe.Pointer
			if old != nil {
				op = *(*unsafe.Pointer)(old)
			}
			switch {
			case np == nil:
				return old != nil && op == nil
			case np == op:
				return true // the cached version's: see sameMemory
			}
			if e.fn(np, op) && op != nil {
				*(*unsafe.Pointer)(p) = op
				return true
			}
			return false
		}
	case reflect.Struct:
		switch t {
		case objectMetaType:
			// Metadata differs between versions (resourceVersion at least).
			return func(p, old unsafe.Pointer) bool {
				in.internObjectMeta((*metav1.ObjectMeta)(p), (*metav1.ObjectMeta)(old))
				return false
			}
		case typeMetaType:
			return func(p, old unsafe.Pointer) bool {
				return old != nil && *(*metav1.TypeMeta)(p) == *(*metav1.TypeMeta)(old)
			}
		}
		type field struct {
			off uintptr
			c   *compiled
		}
		type span struct{ off, size uintptr }
		var fields []field
		var spans []span // compared bytewise: pointer-free fields, and fields the walk must not enter
		for i := range t.NumField() {
			f := t.Field(i)
			switch k := f.Type.Kind(); {
			case !hasPointers(f.Type), !f.IsExported(), k == reflect.Func, k == reflect.Chan, k == reflect.UnsafePointer:
				// Unexported and opaque fields: equal when they hold the
				// very same pointers (sound, if conservative).
				if n := len(spans); n > 0 && spans[n-1].off+spans[n-1].size == f.Offset {
					spans[n-1].size += f.Type.Size()
				} else if f.Type.Size() > 0 {
					spans = append(spans, span{f.Offset, f.Type.Size()})
				}
			default:
				fields = append(fields, field{f.Offset, in.build(f.Type, building)})
			}
		}
		return func(p, old unsafe.Pointer) bool {
			if p == old {
				return true // the cached version's: see sameMemory
			}
			same := old != nil
			for _, s := range spans {
				if !same {
					break
				}
				same = sameBytes(unsafe.Add(p, s.off), unsafe.Add(old, s.off), s.size)
			}
			for _, f := range fields {
				var of unsafe.Pointer
				if old != nil {
					of = unsafe.Add(old, f.off)
				}
				if !f.c.fn(unsafe.Add(p, f.off), of) {
					same = false
				}
			}
			return same
		}
	case reflect.Slice:
		size := t.Elem().Size()
		if !hasPointers(t.Elem()) {
			// Bytes and numbers: one comparison, nothing to intern.
			return func(p, old unsafe.Pointer) bool {
				h := (*sliceHeader)(p)
				if old == nil {
					in.trim(t, p)
					return false
				}
				oh := (*sliceHeader)(old)
				if h.len == oh.len && (h.data == nil) == (oh.data == nil) && sameBytes(h.data, oh.data, uintptr(h.len)*size) {
					if h.data != oh.data {
						*h = *oh
					}
					return true
				}
				in.trim(t, p)
				return false
			}
		}
		e := in.build(t.Elem(), building)
		return func(p, old unsafe.Pointer) bool {
			h := (*sliceHeader)(p)
			var oh *sliceHeader
			if old != nil {
				oh = (*sliceHeader)(old)
			}
			if oh != nil && oh.data == h.data {
				return oh.len == h.len // the cached version's: see sameMemory
			}
			same := oh != nil && h.len == oh.len && (h.data == nil) == (oh.data == nil)
			for i := range h.len {
				var oe unsafe.Pointer
				if oh != nil && i < oh.len {
					oe = unsafe.Add(oh.data, uintptr(i)*size)
				}
				if !e.fn(unsafe.Add(h.data, uintptr(i)*size), oe) {
					same = false
				}
			}
			if same {
				*h = *oh // one copy of an unchanged list
				return true
			}
			in.trim(t, p)
			return false
		}
	case reflect.Array:
		e := in.build(t.Elem(), building)
		size, n := t.Elem().Size(), t.Len()
		return func(p, old unsafe.Pointer) bool {
			same := old != nil
			for i := range n {
				var oe unsafe.Pointer
				if old != nil {
					oe = unsafe.Add(old, uintptr(i)*size)
				}
				if !e.fn(unsafe.Add(p, uintptr(i)*size), oe) {
					same = false
				}
			}
			return same
		}
	case reflect.Map:
		if t == resourceListType {
			return func(p, old unsafe.Pointer) bool {
				m := (*corev1.ResourceList)(p)
				var om corev1.ResourceList
				if old != nil {
					om = *(*corev1.ResourceList)(old)
				}
				if *m == nil {
					return old != nil && om == nil
				}
				c := in.resources.canonical(in.seed, *m, om, nil)
				if !samePtr(c, *m) {
					*m = c
				}
				return old != nil && om != nil && samePtr(c, om)
			}
		}
		if t == stringMapType {
			return func(p, old unsafe.Pointer) bool {
				m := (*map[string]string)(p)
				var om map[string]string
				if old != nil {
					if *(*unsafe.Pointer)(old) == *(*unsafe.Pointer)(p) {
						return true // the cached version's: see sameMemory
					}
					om = *(*map[string]string)(old)
					if equalStringMaps(*m, om) {
						*m = om
						return true
					}
				}
				// Shared as labels are (a CR's parameters, a Pod's node
				// selector, a ConfigMap's data repeat across objects):
				// one map per content, its strings interned. A large
				// one (a ConfigMap holding a document) is only interned
				// entry by entry, short values only: the tables of
				// shared maps would keep it alive after its objects.
				if stringMapLarger(*m, maxSharedMap) {
					in.internStringMap(*m, om, maxInterned)
				} else {
					in.shareStringMap(m, om)
				}
				return false
			}
		}
		if t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.String {
			// Other maps (rare in API types): left as they are, equal
			// only when they are the same map.
			return func(p, old unsafe.Pointer) bool {
				return old != nil && *(*unsafe.Pointer)(old) == *(*unsafe.Pointer)(p)
			}
		}
		// Named string types: through reflect, without the previous
		// version (rare in API types).
		return func(p, old unsafe.Pointer) bool {
			if old != nil && *(*unsafe.Pointer)(old) == *(*unsafe.Pointer)(p) {
				return true // the cached version's: see sameMemory
			}
			v := reflect.NewAt(t, p).Elem()
			it := v.MapRange()
			for it.Next() {
				k, e := it.Key(), it.Value()
				nk := reflect.New(t.Key()).Elem()
				nk.SetString(in.intern(k.String()))
				ne := reflect.New(t.Elem()).Elem()
				ne.SetString(in.canonical(e.String(), nil, maxInterned))
				v.SetMapIndex(nk, ne)
			}
			return false
		}
	case reflect.Interface:
		// The dynamic value of an interface cannot be written in place;
		// what a pointer in it reaches can. Never shared.
		return func(p, old unsafe.Pointer) bool {
			v := reflect.NewAt(t, p).Elem()
			if v.IsNil() {
				return old != nil && reflect.NewAt(t, old).Elem().IsNil()
			}
			if x := v.Elem(); x.Kind() == reflect.Pointer && !x.IsNil() {
				in.compile(x.Type().Elem()).fn(x.UnsafePointer(), nil)
			}
			return false
		}
	}
	// Funcs, channels, unsafe pointers: equal when identical.
	size := t.Size()
	return func(p, old unsafe.Pointer) bool { return old != nil && sameBytes(p, old, size) }
}

// trim drops the spare capacity of the slice of type t at p: a decoder
// grows slices by doubling, and a quarter of a decoded Pod's slice memory
// is spare capacity.
func (in *interner) trim(t reflect.Type, p unsafe.Pointer) {
	h := (*sliceHeader)(p)
	if h.cap == h.len {
		return
	}
	v := reflect.NewAt(t, p).Elem()
	exact := reflect.MakeSlice(t, h.len, h.len)
	reflect.Copy(exact, v)
	v.Set(exact)
}

// sameBytes reports whether the size bytes at a and b are equal.
func sameBytes(a, b unsafe.Pointer, size uintptr) bool {
	if size == 0 || a == b {
		return true
	}
	return unsafe.String((*byte)(a), size) == unsafe.String((*byte)(b), size)
}

// equalStringMaps reports whether a and b hold the same entries (a nil map
// only equals a nil map).
func equalStringMaps(a, b map[string]string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		if ov, ok := b[k]; !ok || ov != v {
			return false
		}
	}
	return true
}

// hasPointers reports whether a value of type t holds a pointer (strings,
// slices, maps, interfaces, functions, channels included).
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.String, reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface,
		reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return true
	}
	return false
}

// canonical returns the canonical copy of s if it is not empty and at most
// limit bytes long (s itself otherwise). old, if not nil, points at the
// string at the same place in the previous version of the object: when it
// is equal, it is that canonical copy.
func (in *interner) canonical(s string, old unsafe.Pointer, limit int) string {
	if s == "" || len(s) > limit {
		return s
	}
	if old != nil {
		if o := *(*string)(old); o == s {
			return o
		}
	}
	return in.intern(s)
}

// canonicalOf is canonical with the previous string as a value.
func (in *interner) canonicalOf(s, old string, limit int) string {
	if s == "" || len(s) > limit {
		return s
	}
	if s == old {
		return old
	}
	return in.intern(s)
}

// internObjectMeta interns the strings of m that repeat across objects,
// taking those equal to old's (nil: none). Names, UIDs, resource versions
// and timestamps are unique to each object and stay as they are.
func (in *interner) internObjectMeta(m, old *metav1.ObjectMeta) {
	const noLimit = int(^uint(0) >> 1)
	if m == old {
		return // the cached version's: see sameMemory
	}
	if old == nil {
		old = &metav1.ObjectMeta{}
	}
	setString(&m.Namespace, in.canonicalOf(m.Namespace, old.Namespace, noLimit))
	setString(&m.GenerateName, in.canonicalOf(m.GenerateName, old.GenerateName, noLimit))
	in.shareStringMap(&m.Labels, old.Labels)
	in.shareStringMap(&m.Annotations, old.Annotations)
	if !sameArray(m.Finalizers, old.Finalizers) {
		for i := range m.Finalizers {
			var o string
			if i < len(old.Finalizers) {
				o = old.Finalizers[i]
			}
			setString(&m.Finalizers[i], in.canonicalOf(m.Finalizers[i], o, noLimit))
		}
	}
	if !sameArray(m.OwnerReferences, old.OwnerReferences) {
		for i := range m.OwnerReferences {
			r := &m.OwnerReferences[i]
			var o metav1.OwnerReference
			if i < len(old.OwnerReferences) {
				o = old.OwnerReferences[i]
			}
			setString(&r.APIVersion, in.canonicalOf(r.APIVersion, o.APIVersion, noLimit))
			setString(&r.Kind, in.canonicalOf(r.Kind, o.Kind, noLimit))
			setString(&r.Name, in.canonicalOf(r.Name, o.Name, noLimit))
			uid := in.canonicalOf(string(r.UID), string(o.UID), noLimit) // shared by an owner's dependents
			setString((*string)(&r.UID), uid)
		}
	}
}

// setString stores c in *dst unless *dst already is that copy (see
// sameMemory).
func setString(dst *string, c string) {
	if unsafe.StringData(c) != unsafe.StringData(*dst) {
		*dst = c
	}
}

// sameArray reports whether a's elements are in old's array.
func sameArray[E any](a, old []E) bool {
	return len(a) > 0 && len(old) >= len(a) && &a[0] == &old[0]
}

// shareStringMap interns the strings of the map[string]string *m (labels,
// annotations, any such map of a typed object) and replaces *m by the
// canonical map of its content (old: the same map in the
// cached version, or nil).
func (in *interner) shareStringMap(m *map[string]string, old map[string]string) {
	if len(*m) == 0 || samePtr(*m, old) {
		return
	}
	if c := in.stringMaps.canonical(in.seed, *m, old, in.prepStrings); !samePtr(c, *m) {
		*m = c
	}
}

// internStrings interns the keys and short values of a map that is about
// to become canonical.
func (in *interner) internStrings(m map[string]string) { in.internStringMap(m, nil, maxInterned) }

// internStringMap interns the keys and the values of at most limit bytes
// of m in place, taking the key and value strings of old (the same map in
// the previous version of the object, or nil) where they are equal.
// Re-assigning an equal key stores the given key string, so the map
// neither grows nor allocates.
func (in *interner) internStringMap(m, old map[string]string, limit int) {
	if len(m) == 0 || sameMap(m, old) {
		return
	}
	matched := 0
	for ok, ov := range old {
		v, found := m[ok]
		if !found {
			continue
		}
		matched++
		m[ok] = in.canonicalOf(v, ov, limit) // also stores ok, the canonical key
	}
	if matched == len(m) {
		return
	}
	for k, v := range m {
		m[in.intern(k)] = in.canonicalOf(v, "", limit)
	}
}

// uniqueMetaFields are the metadata fields unique to each object: not worth
// interning.
var uniqueMetaFields = map[string]bool{"name": true, "uid": true, "resourceVersion": true, "creationTimestamp": true, "deletionTimestamp": true, "selfLink": true}

// internJSONMap interns the keys and short string values of an unstructured
// object, in place, except the unique fields of its metadata (isMeta).
func (in *interner) internJSONMap(m map[string]any, isMeta bool) {
	for k, v := range m {
		switch x := v.(type) {
		case string:
			if len(x) <= maxInterned && !(isMeta && uniqueMetaFields[k]) {
				v = in.intern(x)
			}
		case map[string]any:
			in.internJSONMap(x, k == "metadata")
		case []any:
			v = in.internJSONSlice(x)
		}
		m[in.intern(k)] = v
	}
}

// internJSONSlice interns s's strings in place and returns s without
// spare capacity.
func (in *interner) internJSONSlice(s []any) []any {
	if cap(s) > len(s) {
		s = append(make([]any, 0, len(s)), s...)
	}
	for i, v := range s {
		switch x := v.(type) {
		case string:
			if len(x) <= maxInterned {
				s[i] = in.intern(x)
			}
		case map[string]any:
			in.internJSONMap(x, false)
		case []any:
			s[i] = in.internJSONSlice(x)
		}
	}
	return s
}

// sameMap reports whether m and old are the same map.
func sameMap(m, old map[string]string) bool {
	return old != nil && *(*unsafe.Pointer)(unsafe.Pointer(&m)) == *(*unsafe.Pointer)(unsafe.Pointer(&old))
}
