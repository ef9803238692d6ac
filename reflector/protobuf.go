package reflector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	irest "kloop.dev/kloop/internal/rest"
)

// Lists and watches in protobuf (RESTOptions.Protobuf), as
// kube-controller-manager and most client-go programs read them: the
// objects of k8s.io/api and metav1.PartialObjectMetadata have generated
// protobuf code, which decodes a few times faster than JSON and allocates
// less. A list is the Kubernetes protobuf envelope of a list message
// (ListMeta as field 1, the items as field 2, as every Kubernetes list
// type numbers them); a watch stream is a sequence of metav1.WatchEvent
// messages, each preceded by its length in four big-endian bytes, whose
// object is enveloped. The server answers in JSON what it has no protobuf
// form for (custom resources), and the decoder follows the answer's
// Content-Type.

// protobufMessage is the generated protobuf code of a Kubernetes type.
type protobufMessage interface {
	Unmarshal([]byte) error
}

// protobufCapable reports whether objects made by newObj decode from
// protobuf.
func protobufCapable[T Object](newObj func() T) bool {
	_, ok := any(newObj()).(protobufMessage)
	return ok
}

// maxProtobufFrame bounds a watch event's message (kube-apiserver's
// objects are at most a few megabytes: etcd takes 1.5 MiB requests).
const maxProtobufFrame = 64 << 20

// decodeProtobufList decodes a list answered in protobuf.
func decodeProtobufList[T Object](r io.Reader, newObj func() T, dropMF bool) (*List[T], error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading the list: %w", err)
	}
	_, kind, msg, err := irest.Unenvelope(b)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(kind, "List") {
		return nil, fmt.Errorf("decoding a list: the answer is a %s", kind)
	}
	list := &List[T]{}
	var spans [][]byte // the items' messages
	err = irest.ForEachField(msg, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			var lm metav1.ListMeta
			if err := lm.Unmarshal(v); err != nil {
				return fmt.Errorf("decoding the list's metadata: %w", err)
			}
			list.ResourceVersion, list.Continue = lm.ResourceVersion, lm.Continue
		case 2:
			spans = append(spans, v)
		}
		return nil
	})
	if err == nil {
		list.Items, err = decodeProtobufItems(spans, newObj, dropMF)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding a %s: %w", kind, err)
	}
	return list, nil
}

// protobufItemsPerWorker is the fewest items a goroutine of
// decodeProtobufItems decodes.
const protobufItemsPerWorker = 256

// decodeProtobufItems decodes the items of a list, on up to GOMAXPROCS
// goroutines (each a run of items, in order) when there are many: an
// informer's initial list is its time to synced.
func decodeProtobufItems[T Object](spans [][]byte, newObj func() T, dropMF bool) ([]T, error) {
	items := make([]T, len(spans))
	decode := func(from, to int) error {
		for i := from; i < to; i++ {
			o := newObj()
			if err := any(o).(protobufMessage).Unmarshal(spans[i]); err != nil {
				return fmt.Errorf("decoding item %d: %w", i, err)
			}
			if dropMF {
				o.SetManagedFields(nil)
			}
			items[i] = o
		}
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), len(spans)/protobufItemsPerWorker)
	if workers <= 1 {
		return items, decode(0, len(spans))
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (len(spans) + workers - 1) / workers
	for w := range workers {
		wg.Go(func() { errs[w] = decode(w*per, min((w+1)*per, len(spans))) })
	}
	wg.Wait()
	return items, errors.Join(errs...)
}

// protobufWatch decodes a watch stream answered in protobuf.
type protobufWatch[T Object] struct {
	r      *bufio.Reader
	newObj func() T
	dropMF bool
	buf    []byte // the last frame's bytes, reused
}

func newProtobufWatch[T Object](r io.Reader, newObj func() T, dropMF bool) *protobufWatch[T] {
	return &protobufWatch[T]{r: bufio.NewReaderSize(r, 32<<10), newObj: newObj, dropMF: dropMF}
}

// next returns the next event, io.EOF at the clean end of the stream.
func (w *protobufWatch[T]) next() (Event[T], error) {
	var ev Event[T]
	var l [4]byte
	if _, err := io.ReadFull(w.r, l[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return ev, io.EOF
		}
		return ev, fmt.Errorf("decoding watch event: %w", err)
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > maxProtobufFrame {
		return ev, fmt.Errorf("decoding watch event: a frame of %d bytes (at most %d)", n, maxProtobufFrame)
	}
	if cap(w.buf) < int(n) || cap(w.buf) > watchBufKeep && n <= watchBufKeep {
		w.buf = make([]byte, max(int(n), 32<<10))
	}
	frame := w.buf[:n]
	if _, err := io.ReadFull(w.r, frame); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // cut, not closed
		}
		return ev, fmt.Errorf("decoding watch event: %w", err)
	}
	var obj []byte
	haveObject := false
	err := irest.ForEachField(frame, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			ev.Type = watch.EventType(v)
		case 2: // a runtime.RawExtension
			haveObject = true
			return irest.ForEachField(v, func(num protowire.Number, v []byte) error {
				if num == 1 {
					obj = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return ev, fmt.Errorf("decoding watch event: %w", err)
	}
	if !haveObject || obj == nil {
		return ev, fmt.Errorf("decoding %q watch event: no object", ev.Type)
	}
	switch {
	case ev.Type == watch.Error:
		st, err := irest.DecodeProtobufStatus(obj)
		if err != nil {
			return ev, fmt.Errorf("decoding ERROR watch event status: %w", err)
		}
		ev.Status = st
		return ev, nil
	case !isObjectEvent(ev.Type):
		return ev, fmt.Errorf("decoding watch event: unknown type %q", ev.Type)
	}
	apiVersion, kind, msg, err := irest.Unenvelope(obj)
	if err != nil {
		return ev, fmt.Errorf("decoding %s watch event object: %w", ev.Type, err)
	}
	o := w.newObj()
	if err := any(o).(protobufMessage).Unmarshal(msg); err != nil {
		return ev, fmt.Errorf("decoding %s watch event object: %w", ev.Type, err)
	}
	// The envelope carries the type the message does not (a JSON event's
	// object names it too).
	o.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	if w.dropMF {
		o.SetManagedFields(nil)
	}
	ev.Object = o
	return ev, nil
}
