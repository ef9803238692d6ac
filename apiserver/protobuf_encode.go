package apiserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"kloop.dev/kloop/apiserver/internal/pbenc"
)

// Answers in protobuf are encoded as kube-apiserver encodes them
// (k8s.io/apimachinery's runtime/serializer/protobuf): the object's Go type
// (from the scheme of protobufDecoder) marshalled by its generated code, in
// the envelope every Kubernetes protobuf message travels in — the magic
// "k8s\x00", then a runtime.Unknown whose typeMeta names the apiVersion
// and kind and whose raw field holds the message. Watch events are
// metav1.WatchEvent messages (no envelope; their object is an enveloped
// object), each preceded by its length as four big-endian bytes.
//
// The server stores JSON: an object is encoded by decoding its JSON into
// its Go type, which the store's JSON always fits (the write path decoded
// it strictly into that type, or checked it against it), then marshalling
// that. A list's message is assembled item by item, as kube-apiserver's
// streaming collections encoding writes it; a watch event is encoded once
// for all its watchers (storage.Event.Encoded).

// protobufMessage is what the generated code of Kubernetes' Go types
// implements.
type protobufMessage interface {
	runtime.Object
	marshaler
}

// marshaler is the generated code of a message (objects and their parts).
type marshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// protobufMagic starts every Kubernetes protobuf envelope.
const protobufMagic = "k8s\x00"

// envelopeTail ends an envelope: its contentEncoding and contentType
// fields, empty (kube-apiserver writes them, empty, too).
const envelopeTail = "\x1a\x00\x22\x00"

// errNoProtobuf is the error of an encoding of a kind that has no Go type
// with a protobuf form.
var errNoProtobuf = errors.New("no protobuf form")

// serves reports whether gvk has a protobuf form: a Go type of the scheme
// with generated protobuf code.
func (p *protobufDecoder) serves(gvk schema.GroupVersionKind) bool {
	if v, ok := p.kinds.Load(gvk); ok {
		return v.(bool)
	}
	_, err := p.message(gvk)
	p.kinds.Store(gvk, err == nil)
	return err == nil
}

// message returns a new Go object of gvk, with its protobuf code.
func (p *protobufDecoder) message(gvk schema.GroupVersionKind) (protobufMessage, error) {
	if _, err := p.decoder(); err != nil {
		return nil, fmt.Errorf("protobuf scheme: %w", err)
	}
	obj, err := p.sc.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%w for %v: %v", errNoProtobuf, gvk, err)
	}
	m, ok := obj.(protobufMessage)
	if !ok {
		return nil, fmt.Errorf("%w for %v: %T has no protobuf code", errNoProtobuf, gvk, obj)
	}
	return m, nil
}

// decodeInto decodes the JSON of an object into m, after resetting it.
func decodeInto(m protobufMessage, data []byte) error {
	if r, ok := m.(interface{ Reset() }); ok {
		r.Reset()
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, m); err != nil {
		return fmt.Errorf("decoding %T for its protobuf encoding: %w", m, err)
	}
	return nil
}

// fromJSON encodes the JSON of an answer (an object, a list, a Status) in
// protobuf, its kind read from its apiVersion and kind.
func (p *protobufDecoder) fromJSON(data []byte) ([]byte, error) {
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &tm); err != nil {
		return nil, fmt.Errorf("reading the kind of an answer: %w", err)
	}
	if tm.APIVersion == "" && tm.Kind == "APIVersions" {
		// An unversioned meta type, written without apiVersion in JSON;
		// its envelope says v1.
		tm.APIVersion = "v1"
	}
	msg, err := p.appendObject(nil, schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind), data)
	if err != nil {
		return nil, err
	}
	return envelope(tm.APIVersion, tm.Kind, msg), nil
}

// appendObject appends the protobuf message (no envelope) of data, the
// JSON of an object of gvk: straight from the JSON (pbenc) when it can
// tell the message from it, else by decoding it into its Go type.
func (p *protobufDecoder) appendObject(b []byte, gvk schema.GroupVersionKind, data []byte) ([]byte, error) {
	if m := p.pbenc(gvk); m != nil {
		if out, ok := m.Append(b, data); ok {
			return out, nil
		}
	}
	m, err := p.message(gvk)
	if err != nil {
		return nil, err
	}
	if err := decodeInto(m, data); err != nil {
		return nil, err
	}
	return appendMessage(b, m, m.Size())
}

// pbenc returns the description of gvk's Go type that encodes its JSON
// straight (nil when pbenc does not describe it, or the kind has no Go
// type), made once per kind.
func (p *protobufDecoder) pbenc(gvk schema.GroupVersionKind) *pbenc.Message {
	if v, ok := p.messages.Load(gvk); ok {
		return v.(*pbenc.Message)
	}
	var msg *pbenc.Message
	if m, err := p.message(gvk); err == nil {
		msg, _ = pbenc.For(reflect.TypeOf(m))
	}
	p.messages.Store(gvk, msg)
	return msg
}

// objectMeta returns the description of metav1.ObjectMeta that encodes it
// straight from the JSON (nil if pbenc does not describe it), made once.
func (p *protobufDecoder) objectMeta() *pbenc.Message {
	p.metaOnce.Do(func() { p.meta, _ = pbenc.For(reflect.TypeFor[metav1.ObjectMeta]()) })
	return p.meta
}

// envelope returns msg, a message of apiVersion/kind, in its envelope.
func envelope(apiVersion, kind string, msg []byte) []byte {
	b := make([]byte, 0, envelopeHeadSize(apiVersion, kind)+len(msg)+len(envelopeTail))
	b = appendEnvelopeHead(b, apiVersion, kind, len(msg))
	b = append(b, msg...)
	return append(b, envelopeTail...)
}

// envelopeHeadSize bounds the bytes appendEnvelopeHead writes for a
// message of any size.
func envelopeHeadSize(apiVersion, kind string) int {
	return len(protobufMagic) + 1 + binary.MaxVarintLen32 + typeMetaSize(apiVersion, kind) + 1 + binary.MaxVarintLen64
}

// typeMetaSize is the size of the runtime.TypeMeta message of an envelope.
func typeMetaSize(apiVersion, kind string) int {
	return 2 + uvarintLen(len(apiVersion)) + len(apiVersion) + uvarintLen(len(kind)) + len(kind)
}

// appendEnvelopeHead appends the start of the envelope of a message of n
// bytes: the magic, the typeMeta, and the tag and length of raw; the
// message and envelopeTail follow.
func appendEnvelopeHead(b []byte, apiVersion, kind string, n int) []byte {
	b = append(b, protobufMagic...)
	b = append(b, 0x0a)
	b = binary.AppendUvarint(b, uint64(typeMetaSize(apiVersion, kind)))
	b = appendBytesField(b, 0x0a, apiVersion)
	b = appendBytesField(b, 0x12, kind)
	b = append(b, 0x12)
	return binary.AppendUvarint(b, uint64(n))
}

// appendEnveloped appends m, of kind apiVersion/kind, in its envelope.
func appendEnveloped(b []byte, apiVersion, kind string, m protobufMessage) ([]byte, error) {
	n := m.Size()
	b = slices.Grow(b, envelopeHeadSize(apiVersion, kind)+n+len(envelopeTail))
	b = appendEnvelopeHead(b, apiVersion, kind, n)
	b, err := appendMessage(b, m, n)
	if err != nil {
		return nil, err
	}
	return append(b, envelopeTail...), nil
}

// appendMessage appends m's message, of n (m.Size()) bytes.
func appendMessage(b []byte, m marshaler, n int) ([]byte, error) {
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	w, err := m.MarshalToSizedBuffer(b[start:])
	if err != nil {
		return nil, fmt.Errorf("encoding %T in protobuf: %w", m, err)
	}
	if w != n {
		return nil, fmt.Errorf("encoding %T in protobuf: %d bytes written, %d expected", m, w, n)
	}
	return b, nil
}

// appendBytesField appends a length-delimited field (tag, length, bytes).
func appendBytesField[T string | []byte](b []byte, tag byte, v T) []byte {
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// protobufList assembles the enveloped message of a list of kind
// apiVersion/listKind in one buffer: its ListMeta (field 1), then n items
// (field 2), each the message item appends to the buffer it is given
// (empty; item may be called on several goroutines at once). ok is false when the list's Go type is not of that shape
// (listShape); the caller encodes it another way. sizeHint is the
// expected size of the items' messages.
func (p *protobufDecoder) protobufList(apiVersion, listKind string, lm *metav1.ListMeta, n, sizeHint int, item func(b []byte, i int) ([]byte, error)) (out []byte, ok bool, err error) {
	l, err := p.message(schema.FromAPIVersionAndKind(apiVersion, listKind))
	if err != nil {
		return nil, false, err
	}
	if !p.listShape(l) {
		return nil, false, nil
	}
	// The message goes after room for the envelope's head, which needs
	// its size: the head is written last, right before the message.
	room := envelopeHeadSize(apiVersion, listKind)
	b := make([]byte, room, room+sizeHint+len(envelopeTail)+64)
	lmSize := lm.Size()
	b = append(b, 0x0a)
	b = binary.AppendUvarint(b, uint64(lmSize))
	if b, err = appendMessage(b, lm, lmSize); err != nil {
		return nil, false, err
	}
	// The items are encoded on up to GOMAXPROCS goroutines when there
	// are many (each a run of items, in order), then joined.
	workers := min(goruntime.GOMAXPROCS(0), n/listItemsPerWorker)
	if workers <= 1 {
		if b, err = appendListItems(b, 0, n, item); err != nil {
			return nil, false, err
		}
	} else {
		parts := make([][]byte, workers)
		errs := make([]error, workers)
		per := (n + workers - 1) / workers
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				parts[w], errs[w] = appendListItems(make([]byte, 0, sizeHint/workers+64), w*per, min((w+1)*per, n), item)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, false, err
		}
		for _, p := range parts {
			b = append(b, p...)
		}
	}
	head := appendEnvelopeHead(make([]byte, 0, room), apiVersion, listKind, len(b)-room)
	start := room - len(head)
	copy(b[start:], head)
	return append(b[start:], envelopeTail...), true, nil
}

// listItemsPerWorker is the fewest items a goroutine of protobufList
// encodes.
const listItemsPerWorker = 256

// appendListItems appends items [from, to) of a list as its field 2.
func appendListItems(b []byte, from, to int, item func(b []byte, i int) ([]byte, error)) ([]byte, error) {
	var scratch []byte
	var err error
	for i := from; i < to; i++ {
		if scratch, err = item(scratch[:0], i); err != nil {
			return nil, err
		}
		b = appendBytesField(b, 0x12, scratch)
	}
	return b, nil
}

// listShape reports whether a list's Go type is encoded as protobufList
// writes it: ListMeta as field 1, Items (a slice of messages) as field 2,
// and nothing else. (meta.k8s.io/v1beta1's PartialObjectMetadataList
// numbers them the other way.)
func (p *protobufDecoder) listShape(l protobufMessage) bool {
	t := reflect.TypeOf(l).Elem()
	if v, ok := p.lists.Load(t); ok {
		return v.(bool)
	}
	ok := false
	if t.Kind() == reflect.Struct && t.NumField() == 3 {
		meta, _ := t.FieldByName("ListMeta")
		items, _ := t.FieldByName("Items")
		ok = strings.HasPrefix(meta.Tag.Get("protobuf"), "bytes,1,") && meta.Type == reflect.TypeFor[metav1.ListMeta]() &&
			strings.HasPrefix(items.Tag.Get("protobuf"), "bytes,2,rep,") && items.Type.Kind() == reflect.Slice
	}
	p.lists.Store(t, ok)
	return ok
}

// appendWatchEvent appends a protobuf watch stream's frame of an event of
// type typ whose object is obj (enveloped): the length, then the
// metav1.WatchEvent message (type, then object, a runtime.RawExtension
// whose raw is obj).
func appendWatchEvent(b []byte, typ string, obj []byte) []byte {
	ext := 1 + uvarintLen(len(obj)) + len(obj)
	n := 1 + uvarintLen(len(typ)) + len(typ) + 1 + uvarintLen(ext) + ext
	b = slices.Grow(b, 4+n)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = appendBytesField(b, 0x0a, typ)
	b = append(b, 0x12)
	b = binary.AppendUvarint(b, uint64(ext))
	return appendBytesField(b, 0x0a, obj)
}
