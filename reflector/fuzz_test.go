package reflector

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"
)

func newPod() *corev1.Pod                         { return &corev1.Pod{} }
func newUnstructured() *unstructured.Unstructured { return &unstructured.Unstructured{} }

// FuzzWatchDecoder feeds arbitrary bytes to the watch stream decoder. It
// must never panic; every event it returns must be well formed, and must
// decode to the same event again after re-encoding.
func FuzzWatchDecoder(f *testing.F) {
	f.Add([]byte(strings.Join(watchStream, "\n")))
	f.Add([]byte(strings.Join(watchStream, "")))
	f.Add([]byte(`{"type":"ADDED","object":null}`))
	f.Add([]byte(`{"type":"ERROR","object":{"code":"x"}}`))
	f.Add([]byte(`{"object":{"metadata":{"name":"a"}},"type":"NOPE"}`))
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a"}},"object":{}}`))
	f.Add([]byte(`{"type":"BOOKMARK"}`))
	f.Add([]byte(`[`))
	f.Add([]byte(`{"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"1"},"spec":{"containers":[{"name":"c"}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStream(t, data, newPod)
		checkStream(t, data, newUnstructured)
	})
}

func checkStream[T Object](t *testing.T, data []byte, newObj func() T) {
	_, isU := any(newObj()).(*unstructured.Unstructured)
	d := newEventDecoder(bytes.NewReader(data), newObj, isU)
	for range 1000 {
		ev, err := d.next()
		if err != nil {
			if errors.Is(err, io.EOF) && err != io.EOF {
				t.Fatalf("wrapped EOF %v: the end of a stream must be io.EOF itself", err)
			}
			return
		}
		switch ev.Type {
		case watch.Error:
			if ev.Status == nil {
				t.Fatal("ERROR event without Status")
			}
			continue
		case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
			if isNil(ev.Object) {
				t.Fatalf("%s event without object", ev.Type)
			}
		default:
			t.Fatalf("event of unknown type %q returned without error", ev.Type)
		}
		// Round trip.
		b, err := json.Marshal(map[string]any{"type": ev.Type, "object": ev.Object})
		if err != nil {
			continue // e.g. unstructured content json cannot re-encode
		}
		again, err := newEventDecoder(bytes.NewReader(b), newObj, isU).next()
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if again.Type != ev.Type || again.Object.GetName() != ev.Object.GetName() ||
			again.Object.GetResourceVersion() != ev.Object.GetResourceVersion() {
			t.Fatalf("round trip changed the event: %s", b)
		}
	}
}

// FuzzListDecoder feeds arbitrary bytes to the list decoder: no panic, and
// a decoded list holds only non-nil objects.
func FuzzListDecoder(f *testing.F) {
	f.Add([]byte(podListPage1))
	f.Add([]byte(podListPage2))
	f.Add([]byte(`{"kind":"PodList","items":null}`))
	f.Add([]byte(`{"kind":"Status","status":"Failure"}`))
	f.Add([]byte(`{"items":[null,{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if l, err := decodeList(bytes.NewReader(data), newPod, false, podsGVR.GroupVersion()); err == nil {
			for _, it := range l.Items {
				if it == nil {
					t.Fatal("nil item")
				}
			}
		}
		if l, err := decodeList(bytes.NewReader(data), newUnstructured, true, podsGVR.GroupVersion()); err == nil {
			for _, it := range l.Items {
				if it == nil || it.Object == nil {
					t.Fatal("nil item")
				}
			}
		}
	})
}

// FuzzTypedDecodeMatchesAPIMachinery: a typed object decoded from a list
// equals what apimachinery's JSON serializer decodes from the same bytes
// (sigs.k8s.io/json, case-sensitive, as in kube's codecs); where the
// serializer refuses an object (a wrong type for a field), so does the list
// decoder.
func FuzzTypedDecodeMatchesAPIMachinery(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","labels":{"x":"y"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	f.Add([]byte(`{"Metadata":{"name":"a"},"SPEC":{"nodeName":"n"},"metadata":{"namespace":"ns"}}`))
	f.Add([]byte(`{"metadata":{"name":"a","name":"b"}}`))
	f.Add([]byte(`{"spec":{"containers":[{"resources":{"limits":{"cpu":"100m","memory":"1Gi"}}}]}}`))
	f.Add([]byte(`{"spec":{"containers":[{"ports":[{"containerPort":"80"}]}]}}`))
	f.Add([]byte(`{"status":{"startTime":"2026-01-02T03:04:05Z","podIP":"10.0.0.1"}}`))
	f.Add([]byte(`{"metadata":{"creationTimestamp":null,"generation":1e3}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		want := &corev1.Pod{}
		wantErr := kjson.UnmarshalCaseSensitivePreserveInts(data, want)
		var syntax *json.SyntaxError
		if wantErr != nil && (errors.As(wantErr, &syntax) || !json.Valid(data)) {
			return // not one JSON value: the list around it is not one item either
		}
		list := append(append([]byte(`{"kind":"PodList","items":[`), data...), "]}"...)
		got, err := decodeList(bytes.NewReader(list), newPod, false, podsGVR.GroupVersion())
		if wantErr != nil {
			if err == nil {
				t.Fatalf("apimachinery refuses %s (%v), the list decoder accepts it", data, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("apimachinery decodes %s, the list decoder fails: %v", data, err)
		}
		if len(got.Items) != 1 || !reflect.DeepEqual(got.Items[0], want) {
			t.Fatalf("decoded differently from apimachinery:\n got %+v\nwant %+v", got.Items, want)
		}
	})
}
