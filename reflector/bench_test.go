package reflector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

// realisticPod is a Pod as a cluster serves it: labels, owner, managed
// fields, two containers with env, probes and resources, a rich status.
func realisticPod(i int) string {
	return fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-7d4b9c8f5-%05d","generateName":"web-7d4b9c8f5-","namespace":"shop","uid":"1b4e28ba-2fa1-11d2-883f-0016d3cc%04d","resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"web","pod-template-hash":"7d4b9c8f5","tier":"frontend"},"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c8f5","uid":"4f1c7a9e-0000-4000-8000-000000000001","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"4f1c7a9e-0000-4000-8000-000000000001\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"MODE\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}},"subresource":"status"}]},"spec":{"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],"containers":[{"name":"web","image":"registry.example.com/shop/web:1.42.0","ports":[{"containerPort":8080,"protocol":"TCP"}],"env":[{"name":"MODE","value":"production"}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"kube-api-access-abcde","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"readinessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"},{"name":"sidecar","image":"registry.example.com/mesh/proxy:2.3.1","resources":{"requests":{"cpu":"10m","memory":"32Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"node-%03d","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:05Z"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z"}],"hostIP":"10.0.0.%d","podIP":"10.244.%d.%d","podIPs":[{"ip":"10.244.%d.%d"}],"startTime":"2026-01-01T00:00:00Z","containerStatuses":[{"name":"web","state":{"running":{"startedAt":"2026-01-01T00:00:03Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.example.com/shop/web:1.42.0","imageID":"registry.example.com/shop/web@sha256:0123456789abcdef","containerID":"containerd://abcdef0123456789","started":true}],"qosClass":"Burstable"}}`,
		i, i%10000, 1000+i, i%100, i%250, i%250, i%200, i%250, i%200)
}

func watchEvents(n int) []byte {
	var b strings.Builder
	for i := range n {
		b.WriteString(`{"type":"MODIFIED","object":`)
		b.WriteString(realisticPod(i))
		b.WriteString("}\n")
	}
	return []byte(b.String())
}

const benchEvents = 200

// configMapEvents is a watch stream of n small ConfigMap updates, the
// shape of the controller benchmark's events.
func configMapEvents(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"obj-%05d","namespace":"bench-1-kloop-w1","uid":"1b4e28ba-2fa1-11d2-883f-0016d3cc%04d","resourceVersion":"%d","creationTimestamp":"2026-11-29T14:00:00Z","labels":{"app":"bench"}},"data":{"seq":"%d"}}}`+"\n", i%128, i%10000, 1000+i, i)
	}
	return []byte(b.String())
}

// BenchmarkWatchDecode compares decoding a JSON watch stream, of realistic
// Pods and of small ConfigMaps: kloop's decoder (the fast path: events framed
// from a read buffer, objects by json-iterator), kloop's standard path
// (sigs.k8s.io/json's streaming decoder, one pass into the typed object), and
// apimachinery's framer + streaming decoder + codec, which client-go's
// watch uses, in the same run. Reported per event.
func BenchmarkWatchDecode(b *testing.B) {
	b.Run("pods", func(b *testing.B) { benchWatchDecode(b, watchEvents(benchEvents), newPod) })
	b.Run("configmaps", func(b *testing.B) {
		benchWatchDecode(b, configMapEvents(benchEvents), func() *corev1.ConfigMap { return &corev1.ConfigMap{} })
	})
}

func benchWatchDecode[T Object](b *testing.B, data []byte, newObj func() T) {
	perEvent := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvents), "ns/event")
	}
	for _, std := range []bool{false, true} {
		name := "kloop"
		if std {
			name = "kloop-std" // the fast path off
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				d := newEventDecoder(bytes.NewReader(data), newObj, false)
				if std {
					d = stdEventDecoder(bytes.NewReader(data), newObj)
				}
				for range benchEvents {
					if _, err := d.next(); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := d.next(); !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
			}
			perEvent(b)
		})
	}
	b.Run("apimachinery", func(b *testing.B) {
		scheme := runtime.NewScheme()
		if err := corev1.AddToScheme(scheme); err != nil {
			b.Fatal(err)
		}
		metav1.AddToGroupVersion(scheme, corev1.SchemeGroupVersion)
		ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{})
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			fr := kjson.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(data)))
			sd := streaming.NewDecoder(fr, ser)
			for range benchEvents {
				var ev metav1.WatchEvent
				if _, _, err := sd.Decode(nil, &ev); err != nil {
					b.Fatal(err)
				}
				obj, _, err := ser.Decode(ev.Object.Raw, nil, any(newObj()).(runtime.Object))
				if err != nil || obj.(metav1.Object).GetName() == "" {
					b.Fatal(err)
				}
			}
		}
		perEvent(b)
	})
}

// sliceWatch replays events, then ends.
type sliceWatch struct {
	events []Event[*corev1.Pod]
	i      int
}

func (w *sliceWatch) Next() (Event[*corev1.Pod], error) {
	if w.i == len(w.events) {
		return Event[*corev1.Pod]{}, io.EOF
	}
	w.i++
	return w.events[w.i-1], nil
}
func (w *sliceWatch) Stop() {}

type nopStore struct{ n int }

func (s *nopStore) Add(*corev1.Pod) error               { s.n++; return nil }
func (s *nopStore) Update(*corev1.Pod) error            { s.n++; return nil }
func (s *nopStore) Delete(*corev1.Pod) error            { s.n++; return nil }
func (s *nopStore) Replace([]*corev1.Pod, string) error { return nil }
func (s *nopStore) Bookmark(string) error               { return nil }

// BenchmarkWatchEvents measures the reflector's own cost per watch event
// (state machine, resourceVersion bookkeeping, store call), decoding aside.
func BenchmarkWatchEvents(b *testing.B) {
	const n = 10000
	events := make([]Event[*corev1.Pod], n)
	for i := range events {
		events[i] = Event[*corev1.Pod]{Type: watch.Modified, Object: pod(fmt.Sprint("p", i%100), fmt.Sprint(1000+i))}
	}
	st := &nopStore{}
	r, err := New[*corev1.Pod](newFakeLW(nil), st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		// An open watch as openWatch makes it, watchdog included.
		_, cancel := context.WithCancel(b.Context())
		w := &liveWatch[*corev1.Pod]{w: &sliceWatch{events: events}, cancel: cancel, timeout: 300, limit: 330 * time.Second}
		w.dog = startWatchdog(r.opts.Clock, w.limit, cancel)
		s := r.step(b.Context(), state[*corev1.Pod]{kind: watching, open: w})
		if s.kind != watching {
			b.Fatalf("state %v", s.kind)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	if st.n != b.N*n {
		b.Fatalf("store got %d events, want %d", st.n, b.N*n)
	}
}

// BenchmarkWatchDecodeUnstructured is BenchmarkWatchDecode into
// *unstructured.Unstructured (how CRs without Go types are read), against
// apimachinery's unstructured JSON scheme.
func BenchmarkWatchDecodeUnstructured(b *testing.B) {
	data := watchEvents(benchEvents)
	b.Run("kloop", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			d := newEventDecoder(bytes.NewReader(data), newUnstructured, true)
			for range benchEvents {
				if _, err := d.next(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvents), "ns/event")
	})
	b.Run("apimachinery", func(b *testing.B) {
		scheme := runtime.NewScheme()
		metav1.AddToGroupVersion(scheme, corev1.SchemeGroupVersion)
		ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{})
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			fr := kjson.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(data)))
			sd := streaming.NewDecoder(fr, ser)
			for range benchEvents {
				var ev metav1.WatchEvent
				if _, _, err := sd.Decode(nil, &ev); err != nil {
					b.Fatal(err)
				}
				obj, _, err := unstructured.UnstructuredJSONScheme.Decode(ev.Object.Raw, nil, nil)
				if err != nil || obj.(*unstructured.Unstructured).GetName() == "" {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvents), "ns/event")
	})
}

// kloop's decoder and apimachinery's codec (client-go's path) decode the
// same realistic Pods to equal objects.
func TestDecodeMatchesAPIMachinery(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{})
	d := newEventDecoder(bytes.NewReader(watchEvents(20)), newPod, false)
	for i := range 20 {
		ev, err := d.next()
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := ser.Decode([]byte(realisticPod(i)), nil, &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(ev.Object, want) {
			t.Fatalf("pod %d differs:\n got %+v\nwant %+v", i, ev.Object, want)
		}
		if len(ev.Object.ManagedFields) != 2 || ev.Object.Spec.Containers[0].Resources.Limits.Memory().String() != "256Mi" {
			t.Fatalf("pod %d decoded incompletely: %+v", i, ev.Object)
		}
	}
}

// The same for *unstructured.Unstructured: equal maps, numbers as int64 or
// float64 exactly as apimachinery makes them.
func TestDecodeUnstructuredMatchesAPIMachinery(t *testing.T) {
	d := newEventDecoder(bytes.NewReader(watchEvents(20)), newUnstructured, true)
	for i := range 20 {
		ev, err := d.next()
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := unstructured.UnstructuredJSONScheme.Decode([]byte(realisticPod(i)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ev.Object.Object, want.(*unstructured.Unstructured).Object) {
			t.Fatalf("object %d differs:\n got %v\nwant %v", i, ev.Object.Object, want)
		}
	}
	l, err := decodeList(strings.NewReader(`{"kind":"List","items":[{"kind":"X","n":1,"f":1.5,"big":12345678901234567890,"a":[2,{"m":-3}]}]}`),
		newUnstructured, true, podsGVR.GroupVersion())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": "X", "apiVersion": "v1", "n": int64(1), "f": 1.5, "big": 12345678901234567890.0,
		"a": []any{int64(2), map[string]any{"m": int64(-3)}}}
	if got := l.Items[0].Object; !reflect.DeepEqual(got, want) {
		t.Errorf("numbers: got %#v, want %#v", got, want)
	}
}

// benchCR is a custom resource with a ≈ 2 KB spec, the shape of the bench
// module's Widget (labels, a dozen parameters, eight endpoints).
type benchCR struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              benchCRSpec `json:"spec"`
}

type benchCRSpec struct {
	Size       int               `json:"size"`
	Color      string            `json:"color"`
	Replicas   int32             `json:"replicas"`
	Tags       []string          `json:"tags,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Endpoints  []struct {
		Name    string `json:"name"`
		URL     string `json:"url"`
		Port    int32  `json:"port"`
		Weight  int32  `json:"weight"`
		Enabled bool   `json:"enabled"`
	} `json:"endpoints,omitempty"`
}

func (c *benchCR) DeepCopyObject() runtime.Object {
	out := *c
	return &out
}

func benchCRItem(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"widget-%d","namespace":"team-%d","uid":"9e1c2a3b-%04x-4d5e-8f90-%012x","resourceVersion":"%d","generation":1,"creationTimestamp":"2023-11-14T22:13:20Z","labels":{"app":"widgets","team":"team-%d"}},"spec":{"size":%d,"color":"red","replicas":3,"tags":["alpha","beta","gamma","delta"],"parameters":{`,
		i, i%20, i%65536, i, 1000+i, i%20, i%10)
	for p := range 12 {
		if p > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"parameter-%02d":"a-moderately-long-value-%d-%d"`, p, p, i%5)
	}
	b.WriteString(`},"endpoints":[`)
	for e := range 8 {
		if e > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"endpoint-%d","url":"https://backend-%d.team-%d.svc.cluster.local/api/v1/widgets","port":8443,"weight":%d,"enabled":%t}`, e, e, i%20, 10*e, e%2 == 0)
	}
	b.WriteString(`]},"status":{}}`)
	return b.String()
}

// BenchmarkTypedListDecode decodes a list page of 10,000 custom resources
// as an informer's initial list does (decodeTypedList, from memory: the
// transport aside). Reported per item.
func BenchmarkTypedListDecode(b *testing.B) {
	const n = 10_000
	var page strings.Builder
	page.WriteString(`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{"resourceVersion":"500000"},"items":[`)
	for i := range n {
		if i > 0 {
			page.WriteByte(',')
		}
		page.WriteString(benchCRItem(i))
	}
	page.WriteString(`]}`)
	data := []byte(page.String())
	newCR := func() *benchCR { return &benchCR{} }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		l, err := decodeTypedList(bytes.NewReader(data), newCR, listDecoding{})
		if err != nil || len(l.Items) != n {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
}

// BenchmarkListCheck: the scan of an item for what json-iterator could
// read differently from apimachinery (listCheck), per byte.
func BenchmarkListCheck(b *testing.B) {
	for name, item := range map[string]string{"cr": benchCRItem(7), "pod": realisticPod(7)} {
		b.Run(name, func(b *testing.B) {
			raw := []byte(item)
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				var c listCheck
				if c.scan(raw); c.risky {
					b.Fatal("risky")
				}
			}
		})
	}
}
