package reflector

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
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
	for _, seed := range []string{
		`{"spec":{"containers":[{"ports":[{"containerPort":80.0}]}]}}`,
		`{"spec":{"containers":[{"ports":[{"containerPort":4294967296}]}]}}`,
		`{"spec":{"containers":[{"ports":[{"containerPort":-0}]}]}}`,
		`{"spec":{"hostNetwork":"true","priority":null}}`,
		`{"spec":{"volumes":[{"name":"v","configMap":{"name":"x","defaultMode":420}}]}}`,
		`{"spec":{"containers":[{"resources":{"limits":{"cpu":5,"memory":"1e3"}}}]}}`,
		`{"status":{"startTime":"bad"}}`,
		`{"spec":{"containers":[{"readinessProbe":{"httpGet":{"port":"http"}}},{"livenessProbe":{"tcpSocket":{"port":8080}}}]}}`,
		`{"metadata":null,"spec":null,"status":{"conditions":null}}`,
		`{"kind":1}`,
		`{"metadata":{"labels":{"a":"1","a":"2"},"annotations":{"k":"v\u00e9\ud83d\ude00"}}}`,
		// map[string]string has a decoder of its own (stringMapDecoder).
		`{"metadata":{"labels":null,"annotations":{}},"spec":{"nodeSelector":{"a":"1","b":"2","a":"3"}}}`,
		`{"metadata":{"labels":{"a":null,"":"e","q\"k":"v\n\\"}}}`,
		`{"metadata":{"labels":{"a":1}}}`,
		`{"metadata":{"labels":{"a":{"b":"c"}}}}`,
		`{"metadata":{"labels":["a"]}}`,
		`{"metadata":{"annotations":"a"}}`,
		`{"metadata":{"labels":{"k0":"v","k1":"v","k2":"v","k3":"v","k4":"v","k5":"v","k6":"v","k7":"v","k8":"v","k9":"v","k10":"v","k11":"v","k12":"v","k13":"v","k14":"v","k15":"v","k16":"v","k17":"v"}}}`,
		`{"spec":{"nodeSelector":{"x":"y"},"nodeSelector":{"z":"w"}}}`,
		"{\"metadata\":{\"name\":\"\xff\xfe\"}}",
		`{"metadata":{"name":"a"},"metadata":{"namespace":"b"}}`,
		`{"spec":{"containers":[{"name":"a"}],"containers":[]}}`,
		`{"spec":{"activeDeadlineSeconds":9223372036854775808}}`,
		`{"spec":{"activeDeadlineSeconds":1.5}}`,
		`{"spec":{"nodeSelector":{"x":null}}}`,
		`{"spec":{"containers":[null]}}`,
		`{"metadata":{"finalizers":"x"}}`,
		`{"metadata":{"creationTimestamp":"2026-01-02T03:04:05.123456789+02:00"}}`,
	} {
		f.Add([]byte(seed))
	}
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

// fuzzCR is a custom resource with the field kinds CRD authors use.
type fuzzCR struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              fuzzSpec `json:"spec"`
}

type fuzzSpec struct {
	Replicas *int32         `json:"replicas,omitempty"`
	Ratio    float64        `json:"ratio"`
	Small    int8           `json:"small"`
	Port     uint16         `json:"port"`
	Big      uint64         `json:"big"`
	On       bool           `json:"on"`
	Data     []byte         `json:"data"`
	Counts   map[string]int `json:"counts"`
	Quoted   int64          `json:"quoted,string"`
	Skipped  string         `json:"-"`
	Free     any            `json:"free"`
	Nested   map[string]any `json:"nested"`
	Tags     []string       `json:"tags"`
	Inline   `json:",inline"`
	Raw      json.RawMessage   `json:"raw"`
	Byname   map[string]string `json:"byName"`
}

type Inline struct {
	Mode string `json:"mode"`
}

func (c *fuzzCR) DeepCopyObject() kruntime.Object {
	out := *c
	return &out
}

// anyCR has interface values: its lists take the standard path.
type anyCR struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              map[string]any `json:"spec"`
}

func (c *anyCR) DeepCopyObject() kruntime.Object {
	out := *c
	return &out
}

func TestTypedListWithInterfaceValues(t *testing.T) {
	item := []byte(`{"metadata":{"name":"a"},"spec":{"n":2,"f":1.5,"l":[1,2.5,"x",null,true],"m":{"big":9007199254740993}}}`)
	want := &anyCR{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(item, want); err != nil {
		t.Fatal(err)
	}
	list := append(append([]byte(`{"items":[`), item...), "]}"...)
	got, err := decodeList(bytes.NewReader(list), func() *anyCR { return &anyCR{} }, false, podsGVR.GroupVersion())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 1 || !reflect.DeepEqual(got.Items[0], want) {
		t.Fatalf("got %+v, want %+v", got.Items, want)
	}
	if _, ok := got.Items[0].Spec["n"].(int64); !ok {
		t.Fatalf("integer in an interface decoded as %T, want int64", got.Items[0].Spec["n"])
	}
}

// FuzzTypedCRDecodeMatchesAPIMachinery is FuzzTypedDecodeMatchesAPIMachinery
// for a custom resource type with floats, small and unsigned integers,
// base64 bytes, ",string" numbers, inline structs and raw JSON.
func FuzzTypedCRDecodeMatchesAPIMachinery(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"a"},"spec":{"replicas":3,"ratio":0.1,"small":-128,"port":65535,"big":18446744073709551615,"on":true}}`,
		`{"spec":{"small":128}}`,
		`{"spec":{"port":-1}}`,
		`{"spec":{"ratio":1e400}}`,
		`{"spec":{"ratio":2.2250738585072011e-308,"data":"aGVsbG8="}}`,
		`{"spec":{"data":"not base64!"}}`,
		`{"spec":{"quoted":"42","counts":{"a":1,"b":-2}}}`,
		`{"spec":{"quoted":42}}`,
		`{"spec":{"mode":"m","Mode":"M","raw":{"any":[1,2]},"byName":{"x":"y"}}}`,
		`{"spec":{"Skipped":"x","-":"y","tags":["a",null]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := &fuzzCR{}
		wantErr := kjson.UnmarshalCaseSensitivePreserveInts(data, want)
		var syntax *json.SyntaxError
		if wantErr != nil && (errors.As(wantErr, &syntax) || !json.Valid(data)) {
			return
		}
		list := append(append([]byte(`{"items":[`), data...), "]}"...)
		got, err := decodeList(bytes.NewReader(list), func() *fuzzCR { return &fuzzCR{} }, false, podsGVR.GroupVersion())
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
			t.Fatalf("decoded differently from apimachinery:\n got %+v\nwant %+v", got.Items[0], want)
		}
	})
}

// TestListCheckAcrossPieces: what makes a list take the standard decoder
// is found wherever the pieces of the page are cut.
func TestListCheckAcrossPieces(t *testing.T) {
	tests := []struct {
		in    string
		risky bool
	}{
		{`{"a":"x\u00e9"}`, true},
		{`{"a":"x\\u"}`, false}, // an escaped backslash, then a u
		{`{"a":1234567890}`, true},
		{`{"a":123456789}`, false},
		{`{"a":"1234567890123"}`, false}, // digits in a string
		{`{"a":"\"","b":1234567890}`, true},
		{"{\"a\":\"\xff\"}", true},
		{`{"a":"é"}`, false},
	}
	for _, tt := range tests {
		for cut := range len(tt.in) + 1 {
			var c listCheck
			c.scan([]byte(tt.in[:cut]))
			c.scan([]byte(tt.in[cut:]))
			// A UTF-8 sequence cut in two may be reported (speed only).
			if c.risky != tt.risky && !(c.risky && !utf8.ValidString(tt.in[:cut])) {
				t.Errorf("%s cut at %d: risky %t, want %t", tt.in, cut, c.risky, tt.risky)
			}
		}
	}
}
