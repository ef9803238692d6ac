package pbenc

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/randfill"
)

// message is a Go value with generated protobuf code.
type message interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// kinds are the Go types of client-go's scheme (every built-in kind)
// that For describes, by kind, and the number of those it does not.
func kinds(t testing.TB) (map[schema.GroupVersionKind]*Message, int) {
	t.Helper()
	sc := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sc); err != nil {
		t.Fatal(err)
	}
	out := map[schema.GroupVersionKind]*Message{}
	refused := 0
	for gvk, typ := range sc.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || !reflect.PointerTo(typ).Implements(reflect.TypeFor[message]()) {
			continue
		}
		m, err := For(typ)
		if err != nil {
			refused++
			continue
		}
		out[gvk] = m
	}
	return out, refused
}

// matches checks the property of Append on data, the JSON of a value of
// typ: if Append encodes it, encoding/json decodes it too, and the
// protobuf decodes to what the generated code's message of that value
// decodes to.
func matches(t *testing.T, m *Message, typ reflect.Type, data []byte) (encoded bool) {
	t.Helper()
	got, ok := m.Append(nil, data)
	if !ok {
		return false
	}
	viaJSON := reflect.New(typ).Interface().(message)
	if err := json.Unmarshal(data, viaJSON); err != nil {
		t.Fatalf("%v: Append encoded what encoding/json refuses (%v): %s", typ, err, data)
	}
	wantPB, err := viaJSON.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := reflect.New(typ).Interface().(message)
	if err := want.Unmarshal(wantPB); err != nil {
		t.Fatal(err)
	}
	have := reflect.New(typ).Interface().(message)
	if err := have.Unmarshal(got); err != nil {
		t.Fatalf("%v: Append's message does not decode (%v): %s", typ, err, data)
	}
	if !equality.Semantic.DeepEqual(have, want) {
		t.Fatalf("%v: Append's message decodes to\n%+v\nthe generated code's to\n%+v\nJSON: %s", typ, have, want, data)
	}
	return true
}

// filler fills Kubernetes objects with random values of the shapes their
// JSON takes (apimachinery's fuzzer functions for metadata, times,
// quantities and int-or-strings; raw extensions holding JSON).
func filler(seed int64) *randfill.Filler {
	return fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, func(serializer.CodecFactory) []any {
		return []any{
			func(r *runtime.RawExtension, c randfill.Continue) {
				if c.Bool() {
					r.Raw = []byte(`{"apiVersion":"v1","kind":"X","n":` + string(rune('0'+c.Intn(10))) + `}`)
				}
			},
		}
	}), rand.NewSource(seed), serializer.NewCodecFactory(runtime.NewScheme()))
}

// Random objects of every built-in kind: Append's message decodes as the
// generated code's does, and For describes nearly every kind.
func TestMatchesGoTypes(t *testing.T) {
	ks, refused := kinds(t)
	if len(ks) < 300 || refused > len(ks)/4 {
		t.Fatalf("For describes %d kinds and refuses %d", len(ks), refused)
	}
	gvks := make([]schema.GroupVersionKind, 0, len(ks))
	for gvk := range ks {
		gvks = append(gvks, gvk)
	}
	slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int { return cmpString(a.String(), b.String()) })
	encoded, total := 0, 0
	for i, gvk := range gvks {
		obj, err := clientgoscheme.Scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		et := reflect.TypeOf(obj).Elem()
		f := filler(int64(i))
		for range 3 {
			v := reflect.New(et).Interface()
			f.Fill(v)
			data, err := json.Marshal(v)
			if err != nil {
				continue
			}
			total++
			if matches(t, ks[gvk], et, data) {
				encoded++
			}
		}
	}
	// Random values are not all of the canonical form stored objects
	// take; most are.
	if encoded < total*3/4 {
		t.Fatalf("Append encoded %d of %d random objects", encoded, total)
	}
	t.Logf("%d kinds, %d refused; %d of %d random objects encoded", len(ks), refused, encoded, total)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FuzzMatchesGoTypes: random objects of a kind chosen by the input (see
// TestMatchesGoTypes).
func FuzzMatchesGoTypes(f *testing.F) {
	ks, _ := kinds(f)
	gvks := make([]schema.GroupVersionKind, 0, len(ks))
	for gvk := range ks {
		gvks = append(gvks, gvk)
	}
	slices.SortFunc(gvks, func(a, b schema.GroupVersionKind) int { return cmpString(a.String(), b.String()) })
	f.Add(uint16(0), int64(1))
	f.Fuzz(func(t *testing.T, k uint16, seed int64) {
		gvk := gvks[int(k)%len(gvks)]
		obj, err := clientgoscheme.Scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		et := reflect.TypeOf(obj).Elem()
		v := reflect.New(et).Interface()
		filler(seed).Fill(v)
		data, err := json.Marshal(v)
		if err != nil {
			return
		}
		matches(t, ks[gvk], et, data)
	})
}

// FuzzAppend: any bytes, read as a Pod's JSON, are encoded only when
// encoding/json decodes them, and then as the generated code encodes what
// it decodes.
func FuzzAppend(f *testing.F) {
	m, err := For(reflect.TypeFor[corev1.Pod]())
	if err != nil {
		f.Fatal(err)
	}
	seeds := []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"x":"y"},"creationTimestamp":"2024-01-02T03:04:05Z"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"500m"}},"ports":[{"containerPort":80}]}],"volumes":[{"name":"v","emptyDir":{}}]}}`,
		`{"metadata":{"name":"b","managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"spec":{"containers":[{"name":"c","livenessProbe":{"httpGet":{"port":"http"}}}]}}`,
		`{"spec":{"containers":[],"containers":[{"name":"x"}]}}`,
		`{"status":{"phase":"Pending","startTime":null,"conditions":[{"type":"Ready","lastTransitionTime":"2024-01-02T03:04:05Z"}]}}`,
		`{"metadata":{"name":"\u00e9\ud83d\ude00","deletionGracePeriodSeconds":-3}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	typ := reflect.TypeFor[corev1.Pod]()
	meta, err := For(reflect.TypeFor[metav1.ObjectMeta]())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		matches(t, m, typ, data)
		// The metadata alone, as the server answers metadata-only reads
		// (its other way decodes case-sensitively, as sigs.k8s.io/json).
		got, ok := meta.AppendMember(nil, data, "metadata")
		if !ok {
			return
		}
		var want metav1.PartialObjectMetadata
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &want); err != nil {
			t.Fatalf("AppendMember encoded what sigs.k8s.io/json refuses (%v): %s", err, data)
		}
		wantPB, err := want.ObjectMeta.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var have, wantMeta metav1.ObjectMeta
		if err := have.Unmarshal(got); err != nil {
			t.Fatal(err)
		}
		if err := wantMeta.Unmarshal(wantPB); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(have, wantMeta) {
			t.Fatalf("metadata %+v, want %+v: %s", have, wantMeta, data)
		}
	})
}

// A few objects in detail: what Append encodes, and what it refuses.
func TestAppend(t *testing.T) {
	m, err := For(reflect.TypeFor[corev1.Pod]())
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeFor[corev1.Pod]()
	for _, tc := range []struct {
		json    string
		encoded bool
	}{
		{`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"7","generation":2,"creationTimestamp":"2024-01-02T03:04:05Z","labels":{"a":"1","b":"2"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","uid":"x","controller":true}]},"spec":{"containers":[{"name":"c","image":"i","env":[{"name":"E","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],"resources":{"requests":{"cpu":"0.5","memory":"1Gi"}},"readinessProbe":{"httpGet":{"path":"/","port":8080},"periodSeconds":10},"securityContext":{"runAsUser":-1}}],"volumes":[{"name":"v","configMap":{"name":"cm","defaultMode":420}}],"terminationGracePeriodSeconds":30},"status":{"phase":"Running","podIPs":[{"ip":"10.0.0.1"}]}}`, true},
		{` {"metadata" : { "name" : "spaced" } } `, true},
		{`{"metadata":{"name":"a"},"spec":{"overhead":{"cpu":1}}}`, true}, // a quantity written as a number
		{`{"metadata":{"name":"a","annotations":{"k":"\u003c\u003e"}}}`, true},
		{`{"metadata":{"deletionTimestamp":null,"labels":null}}`, true},
		{`{"unknown":1}`, false},
		{`{"metadata":{"generation":1.5}}`, false},
		{`{"metadata":{"generation":"1"}}`, false},
		{`{"metadata":{"creationTimestamp":"yesterday"}}`, false},
		{`{"spec":{"containers":[null]}}`, false},
		{`{"spec":{"containers":[{"name":"a"}]},"spec":{"containers":[{"name":"b"}]}}`, false},
		{`{"metadata":{"name":"a"}`, false},
		{`{"metadata":{"name":"a"}} x`, false},
		{`{"metadata":{"\u006eame":"a"}}`, false},
		{`[]`, false},
		{``, false},
	} {
		if got := matches(t, m, typ, []byte(tc.json)); got != tc.encoded {
			t.Errorf("%s: encoded %v, want %v", tc.json, got, tc.encoded)
		}
	}
}

// For refuses types whose JSON it does not read exactly.
func TestForRefuses(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[struct {
			X any `json:"x" protobuf:"bytes,1,opt,name=x"`
		}](),
		reflect.TypeFor[struct {
			X string `json:"x"`
		}](),
		reflect.TypeFor[struct {
			X map[int]string `json:"x" protobuf:"bytes,1,rep,name=x"`
		}](),
		reflect.TypeFor[struct {
			X json.RawMessage `json:"x" protobuf:"bytes,1,opt,name=x"`
		}](),
	} {
		if _, err := For(typ); err == nil {
			t.Errorf("%v described", typ)
		}
	}
}

// AppendMember encodes one member of any JSON object as decoding the whole
// object into a type with just that member would.
func TestAppendMember(t *testing.T) {
	m, err := For(reflect.TypeFor[metav1.ObjectMeta]())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		json    string
		encoded bool
	}{
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"a":"b"},"generation":3},"spec":{"any":[1,{"x":null}],"more":"\u00e9"}}`, true},
		{`{"spec":{},"metadata":{"name":"late"}}`, true},
		{`{"spec":{}}`, true},
		{`{"metadata":null}`, true},
		{`{}`, true},
		{`{"metadata":{"name":"a"},"metadata":{"name":"b"}}`, false},
		{`{"metadata":{"name":"a"},"spec":{"bad":}}`, false},
		{`{"metadata":{"unknown":1}}`, false},
		{`[]`, false},
	} {
		got, ok := m.AppendMember(nil, []byte(tc.json), "metadata")
		if ok != tc.encoded {
			t.Errorf("%s: encoded %v, want %v", tc.json, ok, tc.encoded)
			continue
		}
		if !ok {
			continue
		}
		var want metav1.PartialObjectMetadata
		if err := json.Unmarshal([]byte(tc.json), &want); err != nil {
			t.Fatal(err)
		}
		var have metav1.ObjectMeta
		if err := have.Unmarshal(got); err != nil {
			t.Fatal(err)
		}
		wantPB, _ := want.ObjectMeta.Marshal()
		var wantMeta metav1.ObjectMeta
		if err := wantMeta.Unmarshal(wantPB); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(have, wantMeta) {
			t.Errorf("%s: %+v, want %+v", tc.json, have, wantMeta)
		}
	}
}
