package reflector

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
)

// kubeProtobuf encodes objects and watch streams as kube-apiserver does
// (apimachinery's protobuf serializer and length-delimited framer).
type kubeProtobuf struct {
	t   *testing.T
	ser *protobuf.Serializer
}

func newKubeProtobuf(t *testing.T) kubeProtobuf {
	sc := runtime.NewScheme()
	if err := corev1.AddToScheme(sc); err != nil {
		t.Fatal(err)
	}
	metav1.AddToGroupVersion(sc, schema.GroupVersion{Version: "v1"})
	return kubeProtobuf{t: t, ser: protobuf.NewSerializer(sc, sc)}
}

func (k kubeProtobuf) encode(obj runtime.Object) []byte {
	k.t.Helper()
	var buf bytes.Buffer
	if err := k.ser.Encode(obj, &buf); err != nil {
		k.t.Fatal(err)
	}
	return buf.Bytes()
}

// stream frames events as a protobuf watch stream.
func (k kubeProtobuf) stream(events ...metav1.WatchEvent) []byte {
	k.t.Helper()
	var buf bytes.Buffer
	w := protobuf.LengthDelimitedFramer.NewFrameWriter(&buf)
	for _, ev := range events {
		b, err := ev.Marshal()
		if err != nil {
			k.t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			k.t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func pbPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv, Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
}

// A protobuf list and watch stream, as kube-apiserver encodes them, decode
// to the objects encoded; managedFields are dropped when asked.
func TestProtobufDecoding(t *testing.T) {
	k := newKubeProtobuf(t)
	newPod := func() *corev1.Pod { return &corev1.Pod{} }
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "next"}, Items: []corev1.Pod{*pbPod("a", "3"), *pbPod("b", "4")}}
	for _, dropMF := range []bool{false, true} {
		got, err := decodeProtobufList(bytes.NewReader(k.encode(list)), newPod, dropMF)
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != "9" || got.Continue != "next" || len(got.Items) != 2 {
			t.Fatalf("list %+v", got)
		}
		for i, p := range got.Items {
			want := list.Items[i].DeepCopy()
			want.TypeMeta = metav1.TypeMeta{} // list items carry none
			if dropMF {
				want.ManagedFields = nil
			}
			if !equality.Semantic.DeepEqual(p, want) {
				t.Fatalf("item %d:\n got %+v\nwant %+v", i, p, want)
			}
		}
	}

	// A long list is decoded on several goroutines, in order.
	long := &corev1.PodList{TypeMeta: list.TypeMeta}
	for i := range 1000 {
		long.Items = append(long.Items, *pbPod(fmt.Sprint(i), "1"))
	}
	got, err := decodeProtobufList(bytes.NewReader(k.encode(long)), newPod, false)
	if err != nil || len(got.Items) != 1000 {
		t.Fatalf("long list: %v", err)
	}
	for i, p := range got.Items {
		if p.Name != fmt.Sprint(i) {
			t.Fatalf("item %d is %s", i, p.Name)
		}
	}

	bookmark := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	expired := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Code: 410,
		Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (5)"}
	stream := k.stream(
		metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: k.encode(pbPod("a", "10"))}},
		metav1.WatchEvent{Type: "BOOKMARK", Object: runtime.RawExtension{Raw: k.encode(bookmark)}},
		metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: k.encode(expired)}},
	)
	w := newProtobufWatch(bytes.NewReader(stream), newPod, true)
	ev, err := w.next()
	want := pbPod("a", "10")
	want.ManagedFields = nil
	if err != nil || ev.Type != watch.Added || !equality.Semantic.DeepEqual(ev.Object, want) {
		t.Fatalf("ADDED: %v %+v", err, ev)
	}
	if ev, err = w.next(); err != nil || ev.Type != watch.Bookmark || ev.Object.ResourceVersion != "12" || ev.Object.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("BOOKMARK: %v %+v", err, ev)
	}
	if ev, err = w.next(); err != nil || ev.Type != watch.Error || ev.Status == nil || ev.Status.Code != 410 || ev.Status.Reason != metav1.StatusReasonExpired {
		t.Fatalf("ERROR: %v %+v", err, ev)
	}
	if _, err = w.next(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
}

// Malformed lists and streams are errors, never panics.
func TestProtobufDecodingErrors(t *testing.T) {
	k := newKubeProtobuf(t)
	newPod := func() *corev1.Pod { return &corev1.Pod{} }
	one := k.stream(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: k.encode(pbPod("a", "1"))}})
	for name, tc := range map[string]struct {
		stream []byte
		want   string
	}{
		"cut in the length":      {one[:2], "unexpected EOF"},
		"cut in the event":       {one[:len(one)-3], "unexpected EOF"},
		"too large a frame":      {[]byte{0xff, 0xff, 0xff, 0xff}, "a frame of"},
		"unknown type":           {k.stream(metav1.WatchEvent{Type: "SURPRISE", Object: runtime.RawExtension{Raw: k.encode(pbPod("a", "1"))}}), "unknown type"},
		"no object":              {k.stream(metav1.WatchEvent{Type: "ADDED"}), "no object"},
		"object not in envelope": {k.stream(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: []byte(`{"kind":"Pod"}`)}}), "envelope"},
		"not a message":          {[]byte{0, 0, 0, 2, 0xff, 0xff}, "decoding watch event"},
	} {
		_, err := newProtobufWatch(bytes.NewReader(tc.stream), newPod, false).next()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	for name, b := range map[string][]byte{
		"JSON":       []byte(`{"kind":"PodList"}`),
		"not a list": k.encode(pbPod("a", "1")),
		"cut":        k.encode(&corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []corev1.Pod{*pbPod("a", "1")}})[:40],
	} {
		if _, err := decodeProtobufList(bytes.NewReader(b), newPod, false); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzProtobufWatch: any stream is decoded without panicking, event after
// event until an error.
func FuzzProtobufWatch(f *testing.F) {
	k := newKubeProtobuf(&testing.T{})
	f.Add(k.stream(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: k.encode(pbPod("a", "1"))}}))
	f.Add(k.stream(metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: k.encode(&metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Code: 410})}}))
	f.Add([]byte{0, 0, 0, 1, 0x0a})
	f.Fuzz(func(t *testing.T, b []byte) {
		w := newProtobufWatch(bytes.NewReader(b), func() *corev1.Pod { return &corev1.Pod{} }, true)
		for range 100 {
			ev, err := w.next()
			if err != nil {
				if errors.Is(err, io.EOF) && err != io.EOF {
					t.Fatalf("wrapped EOF: %v", err)
				}
				break
			}
			if ev.Type == watch.Error && ev.Status == nil || ev.Type != watch.Error && ev.Object == nil {
				t.Fatalf("event %+v", ev)
			}
		}
		_, _ = decodeProtobufList(bytes.NewReader(b), func() *corev1.Pod { return &corev1.Pod{} }, false)
	})
}
