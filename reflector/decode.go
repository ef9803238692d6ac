package reflector

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"
)

// decoder is the streaming JSON decoder the list and watch decoders use:
// encoding/json's (with UseNumber) for unstructured objects, the
// case-sensitive one of sigs.k8s.io/json for typed objects.
type decoder interface {
	Decode(v any) error
	Token() (json.Token, error)
	More() bool
}

// newDecoder returns the decoder for r.
func newDecoder(r io.Reader, isUnstructured bool) decoder {
	if isUnstructured {
		dec := json.NewDecoder(r)
		dec.UseNumber()
		return dec
	}
	return kjson.NewDecoderCaseSensitivePreserveInts(r)
}

// The decoders below read the JSON the API server sends without building
// an intermediate tree: the list's items and each watch event's object are
// decoded straight into the caller's objects, in one pass over the stream.
// For *unstructured.Unstructured, numbers are then converted to int64 (or
// float64 when not integral) as apimachinery's decoding makes them.
// Typed objects are decoded by sigs.k8s.io/json's case-sensitive decoder,
// the one apimachinery's JSON serializer uses: keys match json tags
// exactly (encoding/json would also accept "Metadata" or "SPEC"), and it is
// faster than encoding/json for that reason — or, on the fast paths of
// typed lists (decodeTypedList) and watches (nextFast), by json-iterator
// configured to read as it does.

// decodeList decodes a list response:
// {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"..","continue":".."},"items":[...]}.
func decodeList[T Object](r io.Reader, newObj func() T, isUnstructured bool, gv schema.GroupVersion) (*List[T], error) {
	return decodeListDropping(r, newObj, isUnstructured, gv, false)
}

// decodeListDropping is decodeList; dropMF: the items come without
// metadata.managedFields (see RESTOptions.DropManagedFields).
func decodeListDropping[T Object](r io.Reader, newObj func() T, isUnstructured bool, gv schema.GroupVersion, dropMF bool) (*List[T], error) {
	var list *List[T]
	var err error
	if !isUnstructured {
		list, err = decodeTypedList(r, newObj, listDecoding{dropMF: dropMF})
	} else {
		list, err = decodeStdList(r, newObj, isUnstructured, gv)
	}
	if err == nil && dropMF {
		for _, it := range list.Items {
			it.SetManagedFields(nil) // those decodeItem did not skip
		}
	}
	return list, err
}

// decodeStdList is decodeList with encoding/json (unstructured objects) or
// sigs.k8s.io/json (typed objects).
func decodeStdList[T Object](r io.Reader, newObj func() T, isUnstructured bool, gv schema.GroupVersion) (*List[T], error) {
	dec := newDecoder(bufio.NewReaderSize(r, 32<<10), isUnstructured)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("decoding list: %w", err)
	}
	list := &List[T]{}
	var kind, apiVersion string
	for dec.More() {
		k, err := objectKey(dec)
		if err != nil {
			return nil, fmt.Errorf("decoding list: %w", err)
		}
		switch k {
		case "kind":
			err = dec.Decode(&kind)
		case "apiVersion":
			err = dec.Decode(&apiVersion)
		case "metadata":
			var m metav1.ListMeta
			if err = dec.Decode(&m); err == nil {
				list.ResourceVersion, list.Continue = m.ResourceVersion, m.Continue
			}
		case "items":
			list.Items, err = decodeItems(dec, newObj, isUnstructured)
		default:
			err = skipValue(dec)
		}
		if err != nil {
			return nil, fmt.Errorf("decoding list field %q: %w", k, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, fmt.Errorf("decoding list: %w", err)
	}
	if kind == "Status" {
		return nil, errors.New("decoding list: the server sent a Status instead of a list")
	}
	if isUnstructured {
		// Items of built-in lists carry no kind or apiVersion: take them
		// from the list.
		itemKind := strings.TrimSuffix(kind, "List")
		if apiVersion == "" {
			apiVersion = gv.String()
		}
		for _, it := range list.Items {
			u := any(it).(*unstructured.Unstructured)
			if u.GetKind() == "" && itemKind != "" {
				u.SetKind(itemKind)
			}
			if u.GetAPIVersion() == "" {
				u.SetAPIVersion(apiVersion)
			}
		}
	}
	return list, nil
}

func decodeItems[T Object](dec decoder, newObj func() T, isUnstructured bool) ([]T, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, nil // "items": null
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("want an array, got %v", t)
	}
	var items []T
	for dec.More() {
		obj := newObj()
		if err := decodeObject(dec, obj, isUnstructured); err != nil {
			return nil, fmt.Errorf("item %d: %w", len(items), err)
		}
		items = append(items, obj)
	}
	if err := expectDelim(dec, ']'); err != nil {
		return nil, err
	}
	return items, nil
}

// decodeObject decodes the next value of dec into obj.
func decodeObject[T Object](dec decoder, obj T, isUnstructured bool) error {
	if isUnstructured {
		// The decoder was made with UseNumber: numbers become int64 or
		// float64 as in apimachinery's decoding, in one pass over the
		// stream and one over the map.
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return err
		}
		if m == nil {
			return errors.New("null object")
		}
		if err := utiljson.ConvertMapNumbers(m, 0); err != nil {
			return err
		}
		any(obj).(*unstructured.Unstructured).Object = m
		return nil
	}
	return dec.Decode(obj)
}

// eventDecoder decodes a watch stream: a sequence of
// {"type":"ADDED","object":{...}} documents.
type eventDecoder[T Object] struct {
	// fast is the fast path's state (typed objects, see nextFast) until
	// it gives up; dec, the standard decoder, is nil until then.
	fast           *fastWatch
	dec            decoder
	newObj         func() T
	isUnstructured bool
	// dropMF: objects come without metadata.managedFields (see
	// RESTOptions.DropManagedFields).
	dropMF bool
}

func newEventDecoder[T Object](r io.Reader, newObj func() T, isUnstructured bool) *eventDecoder[T] {
	d := &eventDecoder[T]{newObj: newObj, isUnstructured: isUnstructured}
	if !isUnstructured && fastTypeOf(newObj) {
		d.fast = &fastWatch{r: r}
	} else {
		d.dec = newDecoder(bufio.NewReaderSize(r, 32<<10), isUnstructured)
	}
	return d
}

// next returns the next event, io.EOF at the clean end of the stream.
func (d *eventDecoder[T]) next() (Event[T], error) {
	ev, err := d.decodeNext()
	if err == nil && d.dropMF && !isNil(ev.Object) {
		ev.Object.SetManagedFields(nil) // those decodeItem did not skip
	}
	return ev, err
}

func (d *eventDecoder[T]) decodeNext() (Event[T], error) {
	if d.fast != nil {
		if ev, ok, err := d.nextFast(); ok {
			return ev, err
		}
		// From this event on, the standard decoder reads the stream.
		d.dec = newDecoder(bufio.NewReaderSize(d.fast.rest(), 32<<10), false)
		d.fast = nil
	}
	var ev Event[T]
	t, err := d.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return ev, io.EOF
		}
		return ev, fmt.Errorf("decoding watch event: %w", err)
	}
	if dl, ok := t.(json.Delim); !ok || dl != '{' {
		return ev, fmt.Errorf("decoding watch event: want an object, got %v", t)
	}
	ev, err = d.event()
	if errors.Is(err, io.EOF) {
		// The stream ended inside an event: it was cut, not closed.
		err = fmt.Errorf("decoding watch event: %w", io.ErrUnexpectedEOF)
	}
	return ev, err
}

// event decodes the rest of an event after its opening brace.
func (d *eventDecoder[T]) event() (Event[T], error) {
	var ev Event[T]
	var raw json.RawMessage // the object when it comes before the type
	haveObject := false
	for d.dec.More() {
		k, err := objectKey(d.dec)
		if err != nil {
			return ev, fmt.Errorf("decoding watch event: %w", err)
		}
		switch k {
		case "type":
			var s string
			if err := d.dec.Decode(&s); err != nil {
				return ev, fmt.Errorf("decoding watch event type: %w", err)
			}
			ev.Type = watch.EventType(s)
		case "object":
			if haveObject {
				return ev, errors.New("decoding watch event: two objects")
			}
			haveObject = true
			if isObjectEvent(ev.Type) {
				// The usual order: type first, so decode in one pass.
				ev.Object = d.newObj()
				if err := decodeObject(d.dec, ev.Object, d.isUnstructured); err != nil {
					return ev, fmt.Errorf("decoding %s watch event object: %w", ev.Type, err)
				}
				continue
			}
			if err := d.dec.Decode(&raw); err != nil {
				return ev, fmt.Errorf("decoding watch event object: %w", err)
			}
		default:
			if err := skipValue(d.dec); err != nil {
				return ev, fmt.Errorf("decoding watch event: %w", err)
			}
		}
	}
	if err := expectDelim(d.dec, '}'); err != nil {
		return ev, fmt.Errorf("decoding watch event: %w", err)
	}
	if !haveObject {
		return ev, fmt.Errorf("decoding %q watch event: no object", ev.Type)
	}
	switch {
	case ev.Type == watch.Error:
		st := &metav1.Status{}
		if err := json.Unmarshal(raw, st); err != nil {
			return ev, fmt.Errorf("decoding ERROR watch event status: %w", err)
		}
		ev.Status = st
	case !isObjectEvent(ev.Type):
		return ev, fmt.Errorf("decoding watch event: unknown type %q", ev.Type)
	case raw != nil:
		// The object came before the type.
		ev.Object = d.newObj()
		od := newDecoder(bytes.NewReader(raw), d.isUnstructured)
		if err := decodeObject(od, ev.Object, d.isUnstructured); err != nil {
			return ev, fmt.Errorf("decoding %s watch event object: %w", ev.Type, err)
		}
	}
	return ev, nil
}

func isObjectEvent(t watch.EventType) bool {
	switch t {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		return true
	}
	return false
}

func objectKey(dec decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, got %v", t)
	}
	return k, nil
}

func expectDelim(dec decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %v, got %v", want, t)
	}
	return nil
}

// skipValue consumes the next value of dec.
func skipValue(dec decoder) error {
	var v json.RawMessage
	return dec.Decode(&v)
}

// decodeTypedList decodes a list of typed objects with json-iterator
// (faster than encoding/json or sigs.k8s.io/json),
// from the whole response (a page), kept in memory. An item json-iterator
// could read differently from apimachinery (see listCheck) is decoded by
// apimachinery's decoder; a list of a type holding interface values, or
// one whose parts or items do not decode, is decoded by decodeStdList
// instead, so results and errors are apimachinery's
// (FuzzTypedDecodeMatchesAPIMachinery, FuzzTypedCRDecodeMatchesAPIMachinery).
//
// The page is cut into its parts while it is read, chunk by chunk
// (listSplitter: the list's own fields, and each item's bytes); the items
// are checked and decoded meanwhile on up to GOMAXPROCS goroutines, in
// batches (itemDecoder: decoding is nearly all of a list's cost, and an
// informer's initial list is what its time to synced is made of). The
// batches are put back in order, so the list keeps the server's order.
func decodeTypedList[T Object](r io.Reader, newObj func() T, ld listDecoding) (*List[T], error) {
	ld.defaults()
	// The page is kept in the chunks it was read in (one buffer grown by
	// doubling would touch three times as much fresh memory, and joining
	// them would copy it all once more); items are slices of them.
	var chunks [][]byte
	std := func() (*List[T], error) {
		rs := make([]io.Reader, len(chunks))
		for i, c := range chunks {
			rs[i] = bytes.NewReader(c)
		}
		return decodeStdList(io.MultiReader(rs...), newObj, false, schema.GroupVersion{})
	}
	// json-iterator makes numbers in interface values float64 where
	// apimachinery makes integers int64: such types take the standard path.
	t := reflect.TypeOf(newObj())
	fast := t.Kind() == reflect.Pointer && !holdsInterface(t.Elem(), map[reflect.Type]bool{})
	dec := newItemDecoder(newObj)
	dec.dropMF = ld.dropMF
	dec.perBatch = ld.itemsPerBatch
	split := listSplitter{item: dec.add, window: ld.carryWindow}
	for size := ld.firstChunk; ; size = min(2*size, ld.maxChunk) {
		c := make([]byte, size)
		n, err := io.ReadFull(r, c)
		if n > 0 {
			chunks = append(chunks, c[:n])
			if fast {
				split.feed(c[:n], false)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			dec.finish()
			return nil, fmt.Errorf("decoding list: %w", err)
		}
	}
	if !fast {
		return std()
	}
	split.feed(nil, true)
	items, decoded := dec.finish()
	parts := split.parts
	if !split.done() || !decoded || !json.Valid(parts.rest) {
		return std() // not a list as the fast path knows it: apimachinery's answer
	}
	list := &List[T]{}
	var kind string
	if parts.kind != nil {
		if !checked(parts.kind) || typedJSON.Unmarshal(parts.kind, &kind) != nil {
			return std()
		}
	}
	if kind == "Status" {
		return nil, errors.New("decoding list: the server sent a Status instead of a list")
	}
	if parts.metadata != nil {
		var m metav1.ListMeta
		if !checked(parts.metadata) || typedJSON.Unmarshal(parts.metadata, &m) != nil {
			return std()
		}
		list.ResourceVersion, list.Continue = m.ResourceVersion, m.Continue
	}
	if len(items) > 0 { // "items": [] is nil too, as apimachinery makes it
		list.Items = items
	}
	return list, nil
}

// checked reports whether json-iterator reads b as apimachinery does (see
// listCheck).
func checked(b []byte) bool {
	var chk listCheck
	chk.scan(b)
	return !chk.risky
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipJSONString returns the index after the string starting at b[i] (a quote),
// or -1 if it does not end.
func skipJSONString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		// The quote ends the string unless an odd number of backslashes
		// precede it.
		k := i
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		i++
		if (i-1-k)%2 == 0 {
			return i
		}
	}
}

// skipJSON returns the index after the value starting at b[i], or -1. It
// matches brackets by depth only: a value's inner grammar is checked when
// the value is decoded.
func skipJSON(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipJSONString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipJSONString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // a number or a literal: up to the next delimiter
		start := i
		for i < len(b) && !isDelimiter(b[i]) {
			i++
		}
		if i == start {
			return -1
		}
		return i
	}
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\n', '\r', '\t', ':', '"', '{', '[':
		return true
	}
	return false
}

// listDecoding tunes decodeTypedList. The zero value holds the defaults;
// tests set the sizes small to cut every token and item by a boundary and to
// decode even short lists on several goroutines.
type listDecoding struct {
	// firstChunk and maxChunk are the sizes of the chunks a list page is
	// read in: the first, doubling up to the largest. Defaults 32 KiB and
	// 1 MiB.
	firstChunk, maxChunk int
	// carryWindow is the splitter's window (listSplitter.window). Default
	// 64 KiB.
	carryWindow int
	// itemsPerBatch is how many items a decoding goroutine takes at a time
	// (and the fewest items worth a second goroutine). Default 64.
	itemsPerBatch int
	// dropMF skips metadata.managedFields (decodeItem).
	dropMF bool
}

// The defaults of listDecoding.
const (
	defaultFirstChunk    = 32 << 10
	defaultMaxChunk      = 1 << 20
	defaultCarryWindow   = 64 << 10
	defaultItemsPerBatch = 64
)

// defaults fills the sizes left zero (or negative).
func (ld *listDecoding) defaults() {
	if ld.firstChunk <= 0 {
		ld.firstChunk = defaultFirstChunk
	}
	if ld.maxChunk < ld.firstChunk {
		ld.maxChunk = max(defaultMaxChunk, ld.firstChunk)
	}
	if ld.carryWindow <= 0 {
		ld.carryWindow = defaultCarryWindow
	}
	if ld.itemsPerBatch <= 0 {
		ld.itemsPerBatch = defaultItemsPerBatch
	}
}

// itemDecoder checks and decodes a list's items while the list is still
// being cut into them: full batches go to up to GOMAXPROCS-1 goroutines
// (started with the first full batch), and to the cutting goroutine itself
// when they are all busy and once the cutting is done. Results keep the
// items' order. An item that is risky (listCheck) is decoded by
// apimachinery's decoder (decodeItem); one that does not decode fails the
// whole decoding: the caller then decodes the list as apimachinery does, for
// its error.
type itemDecoder[T Object] struct {
	newObj func() T
	dropMF bool // skip metadata.managedFields (decodeItem)
	// perBatch is how many items a batch holds (listDecoding.itemsPerBatch;
	// 0: defaultItemsPerBatch).
	perBatch int
	cur      [][]byte       // the batch being filled, by add's goroutine only
	work     chan itemBatch // full batches; nil until the first one
	wg       sync.WaitGroup
	failed   atomic.Bool

	mu  sync.Mutex // guards out
	out [][]T      // decoded batches by number; grows with each batch sent
}

type itemBatch struct {
	n    int // the batch's number: its place in the list
	raws [][]byte
}

func newItemDecoder[T Object](newObj func() T) *itemDecoder[T] {
	return &itemDecoder[T]{newObj: newObj}
}

// add takes the next item's bytes.
func (d *itemDecoder[T]) add(raw []byte) {
	d.cur = append(d.cur, raw)
	per := d.perBatch
	if per <= 0 {
		per = defaultItemsPerBatch
	}
	if len(d.cur) < per {
		return
	}
	if d.work == nil {
		workers := runtime.GOMAXPROCS(0) - 1
		d.work = make(chan itemBatch, 2*max(1, workers))
		for range workers {
			d.wg.Go(func() {
				for b := range d.work {
					d.decodeBatch(b)
				}
			})
		}
	}
	b := d.send()
	select {
	case d.work <- b:
	default: // every goroutine is busy and the queue full: decode it here
		d.decodeBatch(b)
	}
}

// send numbers the current batch and starts a new one.
func (d *itemDecoder[T]) send() itemBatch {
	d.mu.Lock()
	b := itemBatch{n: len(d.out), raws: d.cur}
	d.out = append(d.out, nil)
	d.mu.Unlock()
	d.cur = nil
	return b
}

// finish decodes what is left, waits for the goroutines and returns the
// items in order (nil for none); ok is false if an item failed.
func (d *itemDecoder[T]) finish() (items []T, ok bool) {
	if len(d.cur) > 0 {
		d.decodeBatch(d.send())
	}
	if d.work != nil {
		close(d.work)
		for b := range d.work { // help with the queued batches
			d.decodeBatch(b)
		}
		d.wg.Wait()
	}
	if d.failed.Load() {
		return nil, false
	}
	n := 0
	for _, b := range d.out {
		n += len(b)
	}
	if n == 0 {
		return nil, true
	}
	items = make([]T, 0, n)
	for _, b := range d.out {
		items = append(items, b...)
	}
	return items, true
}

func (d *itemDecoder[T]) decodeBatch(b itemBatch) {
	objs := make([]T, len(b.raws))
	for i, raw := range b.raws {
		if d.failed.Load() {
			return
		}
		obj := d.newObj()
		if !bytes.Equal(raw, []byte("null")) {
			var ok bool
			if obj, ok = decodeItem(raw, d.newObj, d.dropMF); !ok {
				d.failed.Store(true) // the page takes the standard path, for its error
				return
			}
		}
		objs[i] = obj
	}
	d.mu.Lock()
	d.out[b.n] = objs
	d.mu.Unlock()
}

// listCheck scans a list's bytes, in consecutive pieces, for what
// json-iterator could read differently from apimachinery: a control
// character in a string (which apimachinery refuses), a \u escape,
// bytes that are not valid UTF-8 (encoding/json replaces invalid sequences
// by U+FFFD; a sequence cut between two pieces counts too, which only costs
// speed), and numbers (outside strings) with a run of 10 digits or more:
// json-iterator reads up to 9 digits exactly and checks the range of every
// integer type on them, but can let longer integers overflow an int32 or an
// int64 without an error.
type listCheck struct {
	risky            bool
	inString, escape bool
	run              int
}

func (c *listCheck) scan(b []byte) {
	if c.risky {
		return
	}
	if !utf8.Valid(b) {
		c.risky = true
		return
	}
	for i := 0; i < len(b); i++ {
		if c.inString && !c.escape {
			// Most of an object's bytes are inside strings: skip those
			// that need no look (see plainInString).
			for i < len(b) && plainInString[b[i]] {
				i++
			}
			if i == len(b) {
				return
			}
		}
		ch := b[i]
		switch {
		case c.escape:
			c.escape = false
			if ch == 'u' {
				c.risky = true
				return
			}
		case c.inString:
			if ch == '\\' {
				c.escape = true
			} else if ch == '"' {
				c.inString = false
			} else if ch < 0x20 {
				// Not JSON; json-iterator lets it through.
				c.risky = true
				return
			}
		case ch == '"':
			c.inString, c.run = true, 0
		case ch >= '0' && ch <= '9':
			if c.run++; c.run >= 10 {
				c.risky = true
				return
			}
		default:
			c.run = 0
		}
	}
}

// plainInString marks the bytes that listCheck passes over inside a
// string: all but a quote, a backslash and control characters (UTF-8 is
// checked before, as a whole).
var plainInString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// holdsInterface reports whether a value of type t can hold an interface
// value decoded from JSON (not below a type that decodes itself).
func holdsInterface(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsInterface(t.Elem(), seen)
	case reflect.Map:
		return holdsInterface(t.Key(), seen) || holdsInterface(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && holdsInterface(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
