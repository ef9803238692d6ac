package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"kloop.dev/kloop/apiserver/storage"
	irest "kloop.dev/kloop/internal/rest"
)

// kubeProtobuf encodes obj as kube-apiserver's protobuf serializer does.
func kubeProtobuf(t *testing.T, p *protobufDecoder, obj runtime.Object) []byte {
	t.Helper()
	if _, err := p.decoder(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(p.sc, p.sc).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Objects encoded from their JSON decode, with kube-apiserver's
// serializer, to the objects encoded; their envelopes, lists and watch
// events are byte for byte what its serializer and framer write (the
// messages inside leave out the zero values the JSON leaves out: see
// pbenc).
func TestProtobufEncodingIsKubes(t *testing.T) {
	now := metav1.Unix(1700000000, 0)
	objs := []runtime.Object{
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u", ResourceVersion: "7", CreationTimestamp: now,
				Labels: map[string]string{"b": "2", "a": "1"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: "Update", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}}},
			Data: map[string]string{"k": "v", "": "empty key"}, BinaryData: map[string][]byte{"bin": {0, 1, 255}}},
		&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", DeletionGracePeriodSeconds: ptr.To[int64](30)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
				Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}, TerminationGracePeriodSeconds: ptr.To[int64](0)},
			Status: corev1.PodStatus{Phase: corev1.PodPending}},
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "d", Generation: 3},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%"))}}}},
		&coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: "l"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), RenewTime: &metav1.MicroTime{Time: now.Add(123456000)}}},
		&metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: "Failure", Code: 404, Reason: metav1.StatusReasonNotFound,
			Details: &metav1.StatusDetails{Name: "a", Kind: "configmaps"}, Message: `configmaps "a" not found`},
		&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: metav1.ObjectMeta{Name: "a"}},
	}
	var p protobufDecoder
	for _, obj := range objs {
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.fromJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		ser, _ := p.decoder()
		dec, gvk, err := ser.Decode(got, nil, nil)
		if err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		dec.GetObjectKind().SetGroupVersionKind(*gvk)
		if !equality.Semantic.DeepEqual(dec, obj) {
			t.Errorf("%T: decodes to\n%+v\nwant\n%+v", obj, dec, obj)
		}
		// The envelope is kube-apiserver's.
		want := kubeProtobuf(t, &p, obj)
		gvk = ptr.To(obj.GetObjectKind().GroupVersionKind())
		n := len(appendEnvelopeHead(nil, gvk.GroupVersion().String(), gvk.Kind, 0)) - 2 // up to raw
		if !bytes.Equal(got[:n], want[:n]) || !bytes.HasSuffix(got, []byte(envelopeTail)) {
			t.Errorf("%T: envelope %q, want %q", obj, got[:n], want[:n])
		}
	}

	// A list, assembled item by item.
	cm := objs[0].(*corev1.ConfigMap)
	list := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "c", RemainingItemCount: ptr.To[int64](4)},
		Items:    []corev1.ConfigMap{*cm, *cm, {}}}
	list.Items[1].Name = "b"
	list.Items[2].Name = "c"
	want := kubeProtobuf(t, &p, list)
	got, ok, err := p.protobufList("v1", "ConfigMapList", &list.ListMeta, len(list.Items), 0, func(b []byte, i int) ([]byte, error) {
		return appendMessage(b, &list.Items[i], list.Items[i].Size())
	})
	if err != nil || !ok || !bytes.Equal(got, want) {
		t.Errorf("list (ok %v, err %v):\n got %q\nwant %q", ok, err, got, want)
	}
	// An empty list too.
	want = kubeProtobuf(t, &p, &corev1.ConfigMapList{TypeMeta: list.TypeMeta})
	got, _, err = p.protobufList("v1", "ConfigMapList", &metav1.ListMeta{}, 0, 0, nil)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("empty list (err %v):\n got %q\nwant %q", err, got, want)
	}
	// meta.k8s.io/v1beta1's PartialObjectMetadataList is of another shape.
	if _, ok, err := p.protobufList("meta.k8s.io/v1beta1", "PartialObjectMetadataList", &metav1.ListMeta{}, 0, 0, nil); ok || err != nil {
		t.Errorf("v1beta1 PartialObjectMetadataList assembled (err %v)", err)
	}
	l := &metav1beta1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1beta1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "3"}, Items: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}}
	data, _ := json.Marshal(l)
	got, err = p.fromJSON(data)
	ser, _ := p.decoder()
	if dec, _, derr := ser.Decode(got, nil, nil); err != nil || derr != nil || !equality.Semantic.DeepEqual(dec.(*metav1beta1.PartialObjectMetadataList).Items, l.Items) {
		t.Errorf("v1beta1 PartialObjectMetadataList from JSON: err %v %v", err, derr)
	}

	// A watch event: framed as kube-apiserver's stream encoder and
	// protobuf.LengthDelimitedFramer write it.
	obj := kubeProtobuf(t, &p, cm)
	ev := metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: obj}}
	msg, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var framed bytes.Buffer
	if _, err := protobuf.LengthDelimitedFramer.NewFrameWriter(&framed).Write(msg); err != nil {
		t.Fatal(err)
	}
	if got := appendWatchEvent(nil, "MODIFIED", obj); !bytes.Equal(got, framed.Bytes()) {
		t.Errorf("watch event:\n got %q\nwant %q", got, framed.Bytes())
	}
}

// A kind with no Go type in the scheme (a custom resource) has no
// protobuf form.
func TestProtobufNoForm(t *testing.T) {
	var p protobufDecoder
	if _, err := p.fromJSON([]byte(`{"apiVersion":"example.com/v1","kind":"Widget"}`)); err == nil {
		t.Fatal("a custom resource encoded in protobuf")
	}
	if p.serves(corev1.SchemeGroupVersion.WithKind("Widget")) || !p.serves(corev1.SchemeGroupVersion.WithKind("Pod")) {
		t.Fatal("serves: wrong kinds")
	}
}

// A watch event's protobuf frame is encoded once, and the same bytes go to
// every watcher; a bookmark is each watcher's own.
func TestProtobufFrameShared(t *testing.T) {
	s := newTestServer(t, Options{})
	k := s.reg.get(namespaceGVR.GroupVersion().WithResource("configmaps"))
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "default"}, "data": map[string]any{"k": "v"}}
	o, err := s.create(k, obj, "default", &writeOpts{})
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for range 2 {
		w, err := s.store.Watch(k.storageResource, storage.WatchOptions{Namespace: "default", Revision: o.ResourceVersion - 1})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := w.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		f, err := s.protobufFrame(&buf, k, ev, metadataOnly{})
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	if &frames[0][0] != &frames[1][0] {
		t.Fatal("two watchers' frames of one event are two encodings")
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frames[0][4:]); err != nil || ev.Type != "ADDED" {
		t.Fatalf("frame: %v %+v", err, ev)
	}
	var cm corev1.ConfigMap
	if _, _, msg, err := irest.Unenvelope(ev.Object.Raw); err != nil || cm.Unmarshal(msg) != nil || cm.Data["k"] != "v" || cm.Name != "a" {
		t.Fatalf("object: %v %+v", err, cm)
	}
	var buf bytes.Buffer
	b1, _ := s.protobufFrame(&buf, k, &storage.Event{Type: storage.Bookmark, Revision: 5}, metadataOnly{})
	var buf2 bytes.Buffer
	b2, _ := s.protobufFrame(&buf2, k, &storage.Event{Type: storage.Bookmark, Revision: 5}, metadataOnly{})
	if !bytes.Equal(b1, b2) || &b1[0] == &b2[0] {
		t.Fatal("bookmarks: not each watcher's own encoding")
	}
}

// A long list, whose items are encoded on several goroutines, keeps its
// order and content.
func TestProtobufLongList(t *testing.T) {
	s := newTestServer(t, Options{})
	k := s.reg.get(namespaceGVR.GroupVersion().WithResource("configmaps"))
	for i := range 1000 {
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprintf("c%04d", i), "namespace": "default"}, "data": map[string]any{"i": fmt.Sprint(i)}}
		if _, err := s.create(k, obj, "default", &writeOpts{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(accept string) *corev1.ConfigMapList {
		req := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps", nil)
		req.Header.Set("Authorization", "Bearer "+s.Token())
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		l := &corev1.ConfigMapList{}
		if accept == protobufContentType {
			ser, _ := s.protobuf.decoder()
			if _, _, err := ser.Decode(rec.Body.Bytes(), nil, l); err != nil {
				t.Fatal(err)
			}
		} else if err := json.Unmarshal(rec.Body.Bytes(), l); err != nil {
			t.Fatal(err)
		}
		l.TypeMeta = metav1.TypeMeta{}
		return l
	}
	pb, js := get(protobufContentType), get("application/json")
	if len(pb.Items) != 1000 || !equality.Semantic.DeepEqual(pb, js) {
		t.Fatalf("the protobuf list (%d items) differs from the JSON one (%d)", len(pb.Items), len(js.Items))
	}
}

// watchEventRecorder is an Interceptor's writer: it records the events
// the server tells it of, and unwraps to the server's writer.
type watchEventRecorder struct {
	http.ResponseWriter
	events []string
}

func (w *watchEventRecorder) WatchEvent(ev WatchEvent)    { w.events = append(w.events, ev.Type) }
func (w *watchEventRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
func (w *watchEventRecorder) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}
func (w *watchEventRecorder) SetWriteDeadline(t time.Time) error { return nil }

// An Interceptor's writer does not hide the encoding a request asks for.
func TestProtobufThroughInterceptor(t *testing.T) {
	s := newTestServer(t, Options{})
	var rec *watchEventRecorder
	s.SetInterceptor(func(w http.ResponseWriter, r *http.Request, req *Request, next http.Handler) {
		rec = &watchEventRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
	})
	k := s.reg.get(namespaceGVR.GroupVersion().WithResource("configmaps"))
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "default"}}
	o, err := s.create(k, obj, "default", &writeOpts{})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/v1/namespaces/default/configmaps/a", "/api/v1/namespaces/default/configmaps/missing",
		fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&resourceVersion=%d", o.ResourceVersion-1)} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token())
		req.Header.Set("Accept", protobufContentType)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, protobufContentType) {
			t.Fatalf("%s: answered in %q", path, ct)
		}
	}
	if fmt.Sprint(rec.events) != "[ADDED]" {
		t.Fatalf("the interceptor's writer was told of %v", rec.events)
	}
}

// Discovery documents are answered in protobuf when asked (/api's
// APIVersions too, which carries no apiVersion in JSON), and 406 when no
// encoding fits.
func TestProtobufDiscovery(t *testing.T) {
	s := newTestServer(t, Options{})
	ser, err := s.protobuf.decoder()
	if err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{"/api": "APIVersions", "/apis": "APIGroupList", "/apis/apps": "APIGroup", "/api/v1": "APIResourceList"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token())
		req.Header.Set("Accept", protobufContentType)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		_, gvk, err := ser.Decode(w.Body.Bytes(), nil, nil)
		if w.Code != http.StatusOK || err != nil || gvk.Kind != kind || w.Header().Get("Content-Type") != protobufContentType {
			t.Fatalf("%s: %d %q %v %v", path, w.Code, w.Header().Get("Content-Type"), gvk, err)
		}
		req.Header.Set("Accept", "text/html")
		w = httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusNotAcceptable {
			t.Fatalf("%s in text/html: %d", path, w.Code)
		}
	}
}
